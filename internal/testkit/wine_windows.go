package testkit

import (
	"sync"

	"golang.org/x/sys/windows"
)

// detected looks up ntdll's wine_get_version once. ntdll.dll is loaded in
// every Windows process, so the lookup maps nothing new.
var detected = sync.OnceValue(func() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})
