#!/bin/sh
# An image CLI wrapper that requires Session material for every call, so the SDK's `claude -v` probe,
# which runs without the Session's environment, fails.
real="${ASTRABOX_REAL_CLI:-claude}"
if [ -z "${SESSION_TOKEN_FILE:-}" ] || [ ! -s "$SESSION_TOKEN_FILE" ]; then
  echo "claude wrapper: no Session material; refusing to start the CLI" >&2
  exit 78
fi
exec "$real" "$@"
