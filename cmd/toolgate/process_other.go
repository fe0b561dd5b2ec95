//go:build !unix

package main

import "time"

func openFileLimit() (uint64, bool) { return 0, false }

func processCPUTime() time.Duration { return -1 }
