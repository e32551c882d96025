"""The trial's side of the loopback relay: ``127.0.0.1:PORT`` inside the trial's network
namespace, each connection carried to a Unix socket that the host side (`_env`) connects on
to the same port of the host's loopback. So an agent running inside the trial reaches its
model endpoint at the URL it was given, and nothing else of the host's network.

Run inside the trial as ``python3 -c <this file's text> PORT=SOCKET ...`` (stdlib only: the
toolkit is not visible there). It prints ``listening`` once every port is bound.
"""

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


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
