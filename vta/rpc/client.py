"""The RPC client: ``connect(host, port)`` returns a :class:`ClientSession`.

A client session offers the same methods as :class:`~vta.rpc.LocalSession`; everything runs
in the server's process. Its devices carry ``session=<the client>``, so
``vta.runtime.ndarray.array(np_array, remote.ext_dev(0))`` calls :meth:`ClientSession.alloc_array`
and the array is created on the server; it comes back as a :class:`RemoteNDArray`.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import ssl
import threading
from typing import Any

import numpy as np

from ..errors import RPCError
from ..runtime import Device, subbyte
from ..runtime.capture import Capture, CaptureViews
from . import _runtime
from .auth import SECRET_ENV, AuthError, client_handshake
from .local import read_upload
from .protocol import (ERROR_KEYS, REPLY_KEYS, FrameError, FrameMAC, check_protocol_keys, decode_value,
                       encode_value, recv_frame, send_frame)

__all__ = ["connect", "ClientSession", "RemoteNDArray", "RemoteModule", "RemoteFunction"]

log = logging.getLogger(__name__)

#: Largest reply a client accepts (the server is trusted more than its clients are).
CLIENT_MAX_PAYLOAD = 1 << 34


class _Remote:
    """Something that lives on the server, named by a handle of one session."""

    kind = ""

    def __init__(self, session: "ClientSession", handle: int):
        self._session = session
        self._handle = handle

    def _tagged(self) -> dict:
        return {"handle": self._handle, "kind": self.kind}


class RemoteFunction(_Remote):
    """A function on the server; calling it sends the arguments and returns the result."""

    kind = "func"

    def __call__(self, *args: Any) -> Any:
        return self._session._request("call", func=self, args=list(args))

    def __repr__(self) -> str:
        return f"<RemoteFunction handle={self._handle}>"


class RemoteModule(_Remote, CaptureViews):
    """A module loaded on the server.

    Besides its functions, it shows what a call builds as a local module does:
    ``capture``, ``disassemble``, ``instructions`` and ``uop_kernels`` run the call on the
    server (by default recording the instruction streams without executing them) and decode
    the streams here.
    """

    kind = "module"

    def capture(self, *args: Any, execute: bool = False, func_name: str | None = None) -> Capture:
        """Call a function on the server and record the instruction streams it hands the device.

        Parameters
        ----------
        *args
            The function's arguments (arrays of this session, numbers ...).
        execute : bool
            Also run the streams on the server's device (default: only record them).
        func_name : str, optional
            The function to call (default: the entry function).

        Returns
        -------
        vta.runtime.capture.Capture

        Raises
        ------
        RPCError
            If the call fails on the server or the connection fails.
        """
        data = self._session._request("module_capture", module=self, args=list(args), execute=bool(execute),
                                      func_name=func_name)
        try:
            return Capture.from_wire(data)
        except ValueError as exc:
            raise RPCError(f"the server sent a malformed capture: {exc}") from exc

    def get_function(self, name: str) -> RemoteFunction:
        """The module's function ``name``.

        Raises
        ------
        RPCError
            If the module has no such function.
        """
        return self._session._request("module_function", module=self, name=name)

    def __getitem__(self, name: str) -> RemoteFunction:
        return self.get_function(name)

    def __call__(self, *args: Any) -> Any:
        """Call the module's entry function."""
        return self._session._request("module_function", module=self, name=None)(*args)

    def time_evaluator(self, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0):
        """A closure timing ``func_name`` on the server (``Module.time_evaluator`` there).

        Returns
        -------
        callable
            ``evaluator(*args) -> ProfileResult`` (``mean`` and ``results`` in seconds, measured
            in the server's process, the connection excluded).

        Raises
        ------
        RPCError
            If the server has no such function or the arguments are invalid.
        """
        from ..runtime.module import ProfileResult

        del dev
        remote = self._session.get_function("runtime.RPCTimeEvaluator")(self, func_name, number, repeat,
                                                                          min_repeat_ms)

        def evaluator(*args: Any) -> ProfileResult:
            mean, results = remote(*args)
            return ProfileResult(float(mean), tuple(float(r) for r in results))

        return evaluator

    def __repr__(self) -> str:
        return f"<RemoteModule handle={self._handle}>"


class RemoteNDArray(_Remote):
    """An array that lives on the server.

    Attributes
    ----------
    shape : tuple of int
    dtype : str
        As for local arrays: NumPy's name, or ``"int4"``... for packed sub-byte arrays (their
        values cross the connection as int8 and are packed on the server).
    device : vta.runtime.Device
        The device, carrying this array's session.
    """

    kind = "array"

    def __init__(self, session: "ClientSession", handle: int, shape, dtype: str, device: Any):
        super().__init__(session, handle)
        self.shape = tuple(shape)
        self.dtype = str(dtype)
        self.device = device
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RPCError(f"remote array {self.shape} {self.dtype} has been closed")

    def numpy(self) -> np.ndarray:
        """Copy the data from the server into a new NumPy array.

        Raises
        ------
        RPCError
            If the array is closed or the connection fails.
        """
        self._check_open()
        return self._session._request("array_numpy", array=self)

    asnumpy = numpy

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of data (packed bytes for sub-byte dtypes)."""
        count = int(np.prod(self.shape, dtype=np.int64))
        sub = subbyte.parse(self.dtype)
        return subbyte.storage_nbytes(count, sub) if sub is not None else count * np.dtype(self.dtype).itemsize

    def copyfrom(self, source: Any) -> "RemoteNDArray":
        """Copy a NumPy array (of this shape and dtype; lists are converted) to the server.

        A sub-byte array (``int4``...) takes integer values that fit (``[-8, 7]``), as locally.

        Raises
        ------
        ValueError
            If the shape or dtype differs.
        DTypeRangeError
            If a value does not fit a sub-byte dtype (checked before anything is sent).
        TypeError
            If a sub-byte array is given non-integer values.
        RPCError
            If the array is closed or the connection fails.
        """
        self._check_open()
        src = source.numpy() if isinstance(source, RemoteNDArray) else source
        sub = subbyte.parse(self.dtype)
        if sub is not None:
            src = src.numpy() if hasattr(src, "numpy") and not isinstance(src, np.ndarray) else np.asarray(src)
            if src.shape != self.shape:
                raise ValueError(f"cannot copy an array of shape {src.shape} and dtype {str(src.dtype)!r} into a "
                                 f"remote array of shape {self.shape} and dtype {self.dtype!r}")
            subbyte.pack(src, sub)  # the range check, here rather than as a remote error
            self._session._request("array_copyfrom", array=self,
                                   data=np.ascontiguousarray(src.astype(sub.numpy_dtype)))
            return self
        if not isinstance(src, np.ndarray):
            src = np.asarray(src, dtype=self.dtype)
        if src.shape != self.shape or str(src.dtype) != self.dtype:
            raise ValueError(f"cannot copy an array of shape {src.shape} and dtype {str(src.dtype)!r} into a "
                             f"remote array of shape {self.shape} and dtype {self.dtype!r}")
        self._session._request("array_copyfrom", array=self, data=np.ascontiguousarray(src))
        return self

    def close(self) -> None:
        """Free the array on the server (idempotent; a closed session frees everything)."""
        if not self._closed:
            self._closed = True
            if not self._session.closed:
                self._session._request("free", handle=self)

    def __enter__(self) -> "RemoteNDArray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteNDArray shape={self.shape} dtype={self.dtype} handle={self._handle}>"


class ClientSession:
    """A session with a remote :class:`~vta.rpc.server.Server` over one TCP connection.

    Create it with :func:`connect`. Methods are thread-safe (one request at a time).
    """

    def __init__(self, sock: socket.socket, max_payload: int = CLIENT_MAX_PAYLOAD,
                 macs: tuple[FrameMAC, FrameMAC] | None = None):
        self._sock = sock
        self._send_mac, self._recv_mac = macs if macs is not None else (None, None)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._max_payload = max_payload
        self.closed = False

    # ------------------------------------------------------------------ transport
    def _encode(self, value: Any) -> dict | None:
        if isinstance(value, _Remote):
            if value._session is not self:
                raise RPCError(f"{value!r} belongs to another session")
            return value._tagged()
        if isinstance(value, Device) and value.session is not None:
            if value.session is not self:
                raise RPCError(f"device {value!r} belongs to another session")
            return {"device": [value.device_type, value.device_id]}
        return None

    def _resolve(self, tagged: dict) -> Any:
        kind, h = tagged.get("kind"), tagged.get("handle")
        if kind == "func":
            return RemoteFunction(self, h)
        if kind == "module":
            return RemoteModule(self, h)
        if kind == "array":
            dev_type, dev_id = tagged.get("device", [12, 0])
            return RemoteNDArray(self, h, tagged.get("shape", []), tagged.get("dtype", ""),
                                 _runtime.make_device(int(dev_type), int(dev_id), session=self))
        raise RPCError(f"the server sent a handle of unknown kind {kind!r}")

    def _request(self, op: str, **args: Any) -> Any:
        if self.closed:
            raise RPCError("the RPC session is closed")
        payloads: list = []
        enc = {k: encode_value(v, payloads, self._encode) for k, v in args.items()}
        with self._lock:
            req_id = next(self._ids)
            try:
                send_frame(self._sock, {"id": req_id, "op": op, "args": enc}, payloads, mac=self._send_mac)
                header, out = recv_frame(self._sock, self._max_payload, self._recv_mac)
            except FrameError as exc:
                self._drop()
                log.warning("RPC connection closed: the reply to %r: %s", op, exc)
                raise RPCError(f"the reply to {op!r} was refused and the connection closed: {exc}") from exc
            except OSError as exc:
                self._drop()
                raise RPCError(f"the connection to the RPC server failed during {op!r}: {exc}") from exc
        check_protocol_keys(header, REPLY_KEYS, f"the reply to {op!r}")
        if not header.get("ok"):
            err = header.get("error") or {}
            if not isinstance(err, dict):
                err = {"message": repr(err)}
            check_protocol_keys(err, ERROR_KEYS, f"the error reply to {op!r}")
            if err.get("type") in ("FrameAuthError", "FrameError") and header.get("id") is None:
                self._drop()  # the server could not follow the stream and closed the connection
            e = RPCError(f"remote {err.get('type', 'error')} in {op!r}: {err.get('message', '')}")
            e.remote_type = err.get("type")
            raise e
        if header.get("id") != req_id:
            self._drop()
            raise RPCError(f"the server answered request {header.get('id')!r} instead of {req_id}")
        return decode_value(header.get("result"), out, self._resolve)

    def _drop(self) -> None:
        self.closed = True
        self._sock.close()

    # ------------------------------------------------------------------ files
    def upload(self, path_or_bytes: Any, target: str | None = None) -> None:
        """Copy a local file (or bytes) into the server session's work directory.

        Raises
        ------
        RPCError
            If the server refuses the name or size, or the connection fails.
        OSError
            If the local file cannot be read.
        """
        name, data = read_upload(path_or_bytes, target)
        self._request("upload", name=name, data=data)

    def download(self, name: str) -> bytes:
        """The contents of a file of the server session's work directory."""
        return self._request("download", name=name)

    def remove(self, name: str) -> None:
        """Delete a file of the server session's work directory."""
        self._request("remove", name=name)

    def listdir(self) -> list[str]:
        """Names of the files in the server session's work directory."""
        return self._request("listdir")

    def ping(self) -> str:
        """Round trip to the server; returns ``"pong"``."""
        return self._request("ping")

    # ------------------------------------------------------------------ code
    def load_module(self, name: str) -> RemoteModule:
        """Load an uploaded module on the server (``vta.runtime.load_module(workdir/name)``)."""
        return self._request("load_module", name=name)

    def get_function(self, name: str) -> RemoteFunction:
        """A global function of the server's process."""
        return self._request("get_function", name=name)

    # ------------------------------------------------------------------ devices and arrays
    def device(self, dev_type: int | str, dev_id: int = 0) -> Any:
        """A device of the server, tagged with this session (arrays on it live on the server).

        Raises
        ------
        ValueError
            If the type is unknown or the id is negative.
        """
        return _runtime.make_device(dev_type, dev_id, session=self)

    def cpu(self, dev_id: int = 0) -> Any:
        """The server's CPU device."""
        return self.device("cpu", dev_id)

    def ext_dev(self, dev_id: int = 0) -> Any:
        """The server's VTA device."""
        return self.device("ext_dev", dev_id)

    def alloc_array(self, shape, dtype: str, dev: Any) -> RemoteNDArray:
        """Allocate an array on the server (the hook ``vta.runtime.ndarray.empty`` calls).

        Raises
        ------
        RPCError
            If ``dev`` belongs to another session or the server cannot allocate.
        """
        if getattr(dev, "session", None) is not self:
            raise RPCError(f"device {dev!r} does not belong to this session")
        sub = subbyte.parse(dtype)
        name = sub.name if sub is not None else str(np.dtype(dtype))
        return self._request("alloc_array", shape=[int(d) for d in shape], dtype=name,
                             device_type=int(dev.device_type), device_id=int(dev.device_id))

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close the connection; the server ends the session and removes its work directory."""
        if not self.closed:
            self.closed = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the server already closed its end
            self._sock.close()

    def __enter__(self) -> "ClientSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _client_tls_context(tls: bool | ssl.SSLContext | None, cafile: str | os.PathLike | None) -> ssl.SSLContext | None:
    if isinstance(tls, ssl.SSLContext):
        if cafile is not None:
            raise ValueError("give either an ssl.SSLContext as tls or a cafile, not both")
        return tls
    if tls is None:
        tls = cafile is not None
    if not isinstance(tls, bool):
        raise ValueError(f"tls must be None, a bool or an ssl.SSLContext, got {tls!r}")
    if not tls:
        if cafile is not None:
            raise ValueError(f"cafile {str(cafile)!r} was given with tls=False")
        return None
    try:  # verifies the certificate and the host name
        ctx = ssl.create_default_context(cafile=None if cafile is None else os.fspath(cafile))
    except (OSError, ssl.SSLError) as exc:
        raise RPCError(f"cannot read the CA certificates {str(cafile)!r}: {exc}; give a PEM file") from exc
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def connect(host: str, port: int, timeout: float | None = None, secret: str | None = None,
            tls: bool | ssl.SSLContext | None = None, cafile: str | os.PathLike | None = None,
            server_hostname: str | None = None) -> ClientSession:
    """Open a session with an RPC server.

    Parameters
    ----------
    host, port
        The server's address.
    timeout : float, optional
        Seconds to wait for the connection and for each reply (default: no limit).
    secret : str, optional
        The server's shared secret (default: the ``VTA_RPC_SECRET`` environment variable); a
        server bound beyond loopback refuses clients that cannot prove it. With a secret every
        frame after the handshake is authenticated in both directions.
    tls : bool or ssl.SSLContext, optional
        Connect over TLS (a server started with ``--tls-cert``). True verifies the server's
        certificate against ``cafile`` (or the system's CA certificates) and its host name; an
        :class:`ssl.SSLContext` is used as given. Default: TLS when ``cafile`` is given.
    cafile : path-like, optional
        PEM file of the certificate authorities (or the self-signed certificate) to trust.
    server_hostname : str, optional
        Name the server's certificate must carry (default: ``host``).

    Raises
    ------
    RPCError
        If the server cannot be reached, or the TLS handshake fails (an unverified certificate,
        a host name the certificate does not carry).
    vta.rpc.auth.AuthError
        If the server refuses the secret, or a secret is given to a server that has none.
    ValueError
        If the TLS arguments contradict each other.
    """
    secret = secret if secret is not None else (os.environ.get(SECRET_ENV) or None)
    ctx = _client_tls_context(tls, cafile)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise RPCError(f"cannot connect to the RPC server at {host}:{port}: {exc}") from exc
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ctx is not None:
        try:
            sock = ctx.wrap_socket(sock, server_hostname=server_hostname or host)
        except (ssl.SSLError, ssl.CertificateError, OSError) as exc:
            sock.close()
            raise RPCError(f"the TLS handshake with {host}:{port} failed: {exc}") from exc
    macs = None
    if secret is not None:
        try:
            macs = client_handshake(sock, secret)
        except (RPCError, OSError) as exc:
            sock.close()
            if isinstance(exc, AuthError):
                raise
            raise RPCError(f"the shared-secret handshake with {host}:{port} failed: {exc}") from exc
    return ClientSession(sock, macs=macs)
