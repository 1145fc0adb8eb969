#!/bin/sh
# An image CLI wrapper that lets the version probes through without Session material but changes them:
# `-v` becomes `--version`, and every call gets a settings flag first.
real="${ASTRABOX_REAL_CLI:-claude}"
if [ "$#" -eq 1 ]; then
  case "$1" in
    -v|--version) exec "$real" --settings /etc/claude/settings.json --version ;;
  esac
fi
if [ -z "${SESSION_TOKEN_FILE:-}" ] || [ ! -s "$SESSION_TOKEN_FILE" ]; then
  echo "claude wrapper: no Session material; refusing to start the CLI" >&2
  exit 78
fi
exec "$real" --settings /etc/claude/settings.json "$@"
