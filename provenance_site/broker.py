"""The embedded broker: kombu's filesystem transport, made safe for several
processes on one host.

kombu's own transport writes a message file in place, so a consumer could
move and read it before it was written (the worker then dies on invalid
JSON), and it claims messages by moving them to the system temp folder,
which is a copy, not an atomic rename, when /tmp is another filesystem.
Here a message is written to a staging folder and renamed into the queue,
and a consumer claims it by an atomic rename inside the broker folder.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic

import kombu.transport
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

SCHEME = "provfs"


class Channel(filesystem.Channel):
    def _folder(self, name: str) -> Path:
        folder = Path(self.data_folder_out).parent / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # kombu's filesystem.Channel names the argument ``payload``, its base ``message``
    def _put(self, queue: str, payload: dict, **kwargs: object) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        staged = self._folder("staging") / name
        staged.write_bytes(str_to_bytes(dumps(payload)))
        os.replace(staged, Path(self.data_folder_out) / name)

    def _get(self, queue: str, timeout: float | None = None) -> dict:
        wanted = f"{queue}.msg"
        claimed_folder = self._folder("claimed")
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = claimed_folder / f"{os.getpid()}-{name}"
            try:
                os.rename(Path(self.data_folder_in) / name, claimed)
            except FileNotFoundError:
                continue  # another consumer took it
            payload = claimed.read_bytes()
            claimed.unlink()
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
    driver_type = SCHEME
    driver_name = SCHEME


kombu.transport.TRANSPORT_ALIASES.setdefault(SCHEME, "provenance_site.broker:Transport")
