"""The astrabox provider harness (private): runs one provider for the Go side, see docs/protocol.md."""
