#!/bin/sh
# An image CLI wrapper that gates the real CLI on Session material (a token file named by
# SESSION_TOKEN_FILE) but passes the SDK's version probes through unchanged.
real="${ASTRABOX_REAL_CLI:-claude}"
if [ "$#" -eq 1 ]; then
  case "$1" in
    -v|--version) exec "$real" "$1" ;;
  esac
fi
if [ -z "${SESSION_TOKEN_FILE:-}" ] || [ ! -s "$SESSION_TOKEN_FILE" ]; then
  echo "claude wrapper: no Session material; refusing to start the CLI" >&2
  exit 78
fi
exec "$real" "$@"
