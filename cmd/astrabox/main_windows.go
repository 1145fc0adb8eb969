// Command astrabox is the conformance kit and simulator for astrabox runtime preparation providers. On
// Windows it only says where to run it: the kit supervises Python processes with Unix facilities (sessions,
// signals, process listings) that Windows does not have.
package main

import (
	"fmt"
	"os"
)

// wslMessage is everything the Windows build says.
const wslMessage = "error: astrabox runs on Linux and macOS only; on Windows, run it under WSL " +
	"(https://learn.microsoft.com/windows/wsl/install): install the Linux build inside WSL " +
	"(pip install astrabox-kit, or a release archive) and run astrabox there, in your project's directory"

func main() {
	fmt.Fprintln(os.Stderr, wslMessage)
	os.Exit(2)
}
