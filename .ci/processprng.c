/*
 * bcryptprimitives.dll for Wine 8, which lacks it.
 *
 * Go 1.22 and later take their random bytes from ProcessPrng in
 * bcryptprimitives.dll, the call Windows 10 and later provide; a Go binary
 * dies at start where the DLL is missing. Wine 8 has no such DLL, so
 * .ci/wine builds this one with Debian's gcc-mingw-w64-x86-64 and copies it
 * into the Wine prefix's windows/system32. It is for CI only: nothing in the
 * module loads it, and real Windows has its own.
 *
 * ProcessPrng is documented to always return TRUE and to fill the whole
 * buffer; RtlGenRandom (advapi32's SystemFunction036) takes a ULONG length,
 * so a larger request is filled in pieces. Should RtlGenRandom ever fail,
 * the process is ended rather than handed bytes that are not random.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			ExitProcess(0xC0000001); /* STATUS_UNSUCCESSFUL */
		data += n;
		len -= n;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
	(void)inst;
	(void)reason;
	(void)reserved;
	return TRUE;
}
