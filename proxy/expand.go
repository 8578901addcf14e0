package proxy

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
