"""The trial's side of the loopback relay: ``127.0.0.1:PORT`` inside the trial's network
namespace, each connection carried to a Unix socket that the host side (`_env`) connects on
to the same port of the host's loopback. So an agent running inside the trial reaches its
model endpoint at the URL it was given, and nothing else of the host's network.

Run inside the trial as ``python3 -I -c <this file's text> PORT=SOCKET ...`` (stdlib only:
the toolkit is not visible there). It prints ``listening`` once every port is bound.
`HostSide` is the host's end, in Harbor's process.
"""

import asyncio
import sys
from collections.abc import Awaitable, Callable

#: connections one trial may hold open through the relay at once, all its ports together: each
#: costs two descriptors in Harbor's process; an agent's model client needs a handful
MAX_CONNECTIONS = 64


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


class HostSide:
    """The host's end of one trial's relay: each Unix-socket connection carried to the host's
    127.0.0.1:PORT only, at most `limit` at once (one more is closed at once, unanswered)."""

    def __init__(self, limit: int = MAX_CONNECTIONS) -> None:
        self.limit = limit
        self.open = 0

    def handler(
        self, port: int
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if self.open >= self.limit:
                writer.close()
                return
            self.open += 1
            try:
                try:
                    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    writer.close()
                    return
                await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            finally:
                self.open -= 1

        return handle


async def main(specs: list[str]) -> None:
    servers = []
    for spec in specs:
        port, _, sock = spec.partition("=")

        async def handle(
            r: asyncio.StreamReader, w: asyncio.StreamWriter, sock: str = sock
        ) -> None:
            try:
                ur, uw = await asyncio.open_unix_connection(sock)
            except OSError:
                w.close()
                return
            await asyncio.gather(pipe(r, uw), pipe(ur, w))

        servers.append(await asyncio.start_server(handle, "127.0.0.1", int(port)))
    print("listening", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
