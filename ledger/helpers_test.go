package ledger

import "encoding/hex"

func hexString(s string) string { return hex.EncodeToString([]byte(s)) }
