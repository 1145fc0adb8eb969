package discovery

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A pyenv shim is a bash script that runs `pyenv exec`, which picks a version and runs that version's
// program: a shell, pyenv's own scripts and their hooks before Python starts (330 to 440 ms here against
// 55 ms for the interpreter itself). pyenvTarget finds the program `pyenv exec` would run without running it,
// and only when that is provable from the files pyenv reads; in every other case the probe runs the shim and
// reads sys.executable as before. The rules follow pyenv 2.x's libexec/pyenv, pyenv-exec, pyenv-version-name,
// pyenv-version-file, pyenv-version-file-read, pyenv-which, pyenv-prefix and pyenv-latest:
//
//   - the shim is exactly the prototype pyenv-rehash writes, for a root R, in R/shims (so _PYENV_SHIM_PATH,
//     which only matters for the system version, stays unset);
//   - PYENV_DIR is unset (pyenv then searches from the working directory, the probe's);
//   - the version is PYENV_VERSION, else the first word of the nearest .python-version from the probe's
//     directory upwards, else of R/version: its first entry must be an installed version (R/versions/V is a
//     directory, so neither pyenv-version-name nor pyenv-latest rewrites it), not "system", without "/";
//   - R/versions/V/bin/PROGRAM is an executable file (pyenv-which stops at the first version that has it);
//   - every hook of the commands on the way (version-name, which, exec) in every hook directory is one whose
//     text is known and which leaves a Python interpreter's path alone (knownPyenvHooks).
//
// The interpreter pyenv would then exec is R/versions/V/bin/PROGRAM, called by that path (its sys.executable).

// pyenvShimRE matches the prototype shim of pyenv-rehash (pyenv 2.x), capturing PYENV_ROOT and the pyenv command.
var pyenvShimRE = regexp.MustCompile(`\A#!/usr/bin/env bash
set -e
\[ -n "\$PYENV_DEBUG" \] && set -x

program="\$\{0##\*/\}"

export PYENV_ROOT="([^"$\x60\\\n]+)"
SHIM_PATH=\$\{0%/\*\}
if \[\[ \$SHIM_PATH != "([^"$\x60\\\n]+)/shims" \]\]; then
  export _PYENV_SHIM_PATH="\$SHIM_PATH"
fi
exec "([^"$\x60\\\n]+)" exec "\$program" "\$@"
\z`)

// knownPyenvHooks are the sha256 sums of hook scripts, shipped with pyenv and pyenv-virtualenv, that do not
// change which interpreter `pyenv exec pythonX` runs when that version's bin/pythonX is an executable file:
//
//   - pyenv.d/exec/pip-rehash.bash: acts for pip and easy_install, or for arguments that contain " -m pip "
//     (the kit never runs that); pip-rehash/python* does not exist;
//   - pyenv-virtualenv's which/conda.bash, which/python-config.bash and which/system-site-packages.bash: act
//     only when the command found is not executable.
var knownPyenvHooks = map[string]string{
	"5c9bbfd89e90fd6f97bd5cfd5bfcf547514b989037ec42dc540790830ba6b126": "exec/pip-rehash.bash",
	"7b2d31d9b9570ccd6cfce46ea29f61ac87deb372f84a8d93e30f4007693ab104": "which/conda.bash",
	"e5b7db4fb65b3d5fecc872d0d5a1386427049d35a5be5c43eb6a3ee6c08e6f1d": "which/python-config.bash",
	"66a033c9d090f0bf7bed9354d83d360703a7359cddf797c4db9a6fdd77c9ff80": "which/system-site-packages.bash",
}

// pyenvHookCommands are the pyenv commands on the way from a shim to the interpreter that source hooks.
var pyenvHookCommands = []string{"version-name", "which", "exec"}

// pyenvTarget returns the interpreter the pyenv shim at shim would run from directory dir, or "" and why it
// cannot be told without running the shim. getenv reads the environment the shim would run in.
func pyenvTarget(shim, dir string, getenv func(string) string) (target, why string) {
	if filepath.Base(filepath.Dir(shim)) != "shims" {
		return "", "not in a shims directory"
	}
	text, err := os.ReadFile(shim)
	if err != nil || len(text) > 4096 {
		return "", "shim unreadable"
	}
	m := pyenvShimRE.FindSubmatch(text)
	if m == nil {
		return "", "not pyenv's shim"
	}
	root, shimRoot, command := strings.TrimSuffix(string(m[1]), "/"), string(m[2]), string(m[3])
	if shimRoot != string(m[1]) || filepath.Clean(filepath.Dir(shim)) != filepath.Join(root, "shims") || !filepath.IsAbs(root) || !filepath.IsAbs(command) {
		return "", "shim outside its root"
	}
	if getenv("PYENV_DIR") != "" {
		return "", "PYENV_DIR set"
	}
	version := ""
	if v := getenv("PYENV_VERSION"); v != "" {
		version, _, _ = strings.Cut(v, ":")
	} else {
		if !filepath.IsAbs(dir) {
			return "", "working directory unknown"
		}
		v, ok := pyenvVersionFile(dir, root)
		if !ok {
			return "", "version file unreadable"
		}
		version = v
	}
	if version == "" || version == "system" || version == "." || version == ".." || strings.ContainsAny(version, "/ \t\r\n") {
		return "", "version " + version + " not a pyenv version"
	}
	if st, err := os.Stat(filepath.Join(root, "versions", version)); err != nil || !st.IsDir() {
		return "", "version " + version + " not installed"
	}
	target = filepath.Join(root, "versions", version, "bin", filepath.Base(shim))
	if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() || !executableByUs(target) {
		return "", "no executable " + target
	}
	prefix := root
	if real, err := filepath.EvalSymlinks(command); err == nil {
		prefix = filepath.Dir(filepath.Dir(real))
	} else {
		return "", "pyenv command missing"
	}
	if why := pyenvHooksKnown(root, prefix, getenv("PYENV_HOOK_PATH")); why != "" {
		return "", why
	}
	return target, ""
}

// pyenvVersionFile reads the version pyenv-version-file and pyenv-version-file-read find from dir: the first
// word of the first entry of the nearest .python-version from dir upwards, else of root/version. ok is false
// when the file found cannot be read as pyenv reads it (then the shim decides).
func pyenvVersionFile(dir, root string) (string, bool) {
	file := filepath.Join(root, "version")
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".python-version")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			file = p
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return "", true // no file: the system version
		}
		return "", false
	}
	if len(data) > 4096 {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(strings.ReplaceAll(sc.Text(), "\r", " "))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		return fields[0], true
	}
	return "", true
}

// pyenvHooksKnown returns "" when every hook script that `pyenv exec` would source on the way is known
// (knownPyenvHooks), or which one is not. The hook directories are libexec/pyenv's PYENV_HOOK_PATH.
func pyenvHooksKnown(root, prefix, envHookPath string) string {
	var dirs []string
	if envHookPath != "" {
		dirs = append(dirs, filepath.SplitList(envHookPath)...)
	}
	dirs = append(dirs, filepath.Join(root, "pyenv.d"))
	if prefix != root {
		dirs = append(dirs, filepath.Join(prefix, "pyenv.d"))
	}
	dirs = append(dirs, "/usr/etc/pyenv.d", "/usr/local/etc/pyenv.d", "/etc/pyenv.d", "/usr/lib/pyenv/hooks")
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*", "etc", "pyenv.d"))
	dirs = append(dirs, plugins...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, cmd := range pyenvHookCommands {
			scripts, _ := filepath.Glob(filepath.Join(d, cmd, "*.bash"))
			for _, s := range scripts {
				data, err := os.ReadFile(s)
				if err != nil {
					return "hook " + s + " unreadable"
				}
				sum := sha256.Sum256(data)
				if known, ok := knownPyenvHooks[hex.EncodeToString(sum[:])]; !ok || known != cmd+"/"+filepath.Base(s) {
					return "hook " + s + " unknown"
				}
			}
		}
	}
	return ""
}
