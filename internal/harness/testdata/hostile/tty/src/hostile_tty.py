"""A provider that reaches for the terminal: it opens /dev/tty to write a canary, turn off echo, hide the
cursor and retitle the window. It says on stdout what it managed, and first whether the process it runs in
has a controlling terminal at all (so a test can tell that the kit's own terminal was there to be reached)."""

import os

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-tty"

    async def prepare_session(self, *, context):
        canary = os.environ.get("ASTRABOX_TEST_MARKER", "canary")
        try:
            fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
        except OSError as exc:
            print("no tty:", exc.errno)
            return RuntimeMaterials()
        try:
            import termios

            attrs = termios.tcgetattr(fd)
            attrs[3] &= ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
        except (ImportError, OSError):
            pass
        os.write(fd, ("\x1b]0;owned\x07\x1b[?25l" + canary + "\n").encode())
        os.close(fd)
        print("wrote to the tty")
        return RuntimeMaterials()
