"""Where the client keeps the last verified paid answer per license, project and domain (its signed
parts, as a string). What a store keeps is verified again every time it is read, so a store only
needs to keep strings: any object with get, set and delete will do."""
import json
import os
import tempfile
import threading
from typing import Dict, Optional

try:
    import fcntl
except ImportError:  # Windows: one process at a time, then
    fcntl = None  # type: ignore[assignment]


class MemoryStore:
    """In memory, for the life of the process (the default)."""

    def __init__(self) -> None:
        self._values: Dict[str, str] = {}

    def get(self, key: str) -> Optional[str]:
        return self._values.get(key)

    def set(self, key: str, value: str) -> None:
        self._values[key] = value

    def delete(self, key: str) -> None:
        self._values.pop(key, None)


class FileStore:
    """In a JSON file, so that a process restarted during an outage still has the last verified
    answer. Written whole to a temporary file (mode 0600) and renamed over the old one under a lock,
    so concurrent writers never leave half a file."""

    def __init__(self, path: str) -> None:
        if not path:
            raise ValueError("FileStore: a file path is required")
        self.path = path
        self._lock = threading.Lock()

    def _read(self) -> Dict[str, str]:
        try:
            with open(self.path, encoding="utf-8") as f:
                values = json.load(f)
        except (OSError, ValueError):
            return {}
        if not isinstance(values, dict):
            return {}
        return {k: v for k, v in values.items() if isinstance(v, str)}

    def _change(self, key: str, value: Optional[str]) -> None:
        with self._lock, open(f"{self.path}.lock", "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            values = self._read()
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(self.path)), suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp makes it 0600
                    json.dump(values, f)
                os.replace(tmp, self.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise

    def get(self, key: str) -> Optional[str]:
        return self._read().get(key)

    def set(self, key: str, value: str) -> None:
        self._change(key, value)

    def delete(self, key: str) -> None:
        self._change(key, None)
