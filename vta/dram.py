"""The simulated DRAM: one arena shared by the runtime and every device (DESIGN contract 2).

The arena is a single anonymous memory mapping. A *physical address* is a byte offset into it;
page 0 is never handed out, so address 0 is never valid. The mapping's host address is exposed
(:attr:`DRAM.host_address`) so that native code (the C runtime, the tsim shim) reads and writes
the very same bytes that :mod:`vta.sim.fsim` sees through :attr:`DRAM.data`.

Allocation is by whole 4 KiB pages, so every buffer is aligned to every element size. A request
takes the smallest freed block that fits (splitting it) or new pages at the top; freed blocks are
coalesced with their neighbours and their pages are returned to the operating system.
"""

from __future__ import annotations

import array
import bisect
import mmap
from typing import Iterator

import numpy as np

from .env import PAGE_BYTES
from .errors import AllocationError, DRAMAccessError

__all__ = ["DRAM", "PAGE_BYTES", "DEFAULT_CAPACITY", "global_dram"]

#: Default arena size. Pages are only backed by memory once touched.
DEFAULT_CAPACITY = 1 << 31
#: Physical addresses are 32 bits wide (driver.h ``vta_phy_addr_t``).
MAX_CAPACITY = 1 << 32


class DRAM:
    """A page-granular arena of simulated device memory.

    Parameters
    ----------
    capacity : int
        Bytes of address space (a multiple of 4096, at most 4 GiB). Untouched pages cost nothing.

    Raises
    ------
    ValueError
        If ``capacity`` is not a positive multiple of the page size or exceeds 4 GiB.

    Examples
    --------
    >>> with DRAM(1 << 20) as dram:
    ...     addr = dram.alloc(64)
    ...     dram.write(addr, b"hello")
    ...     dram.read(addr, 5)
    b'hello'
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity <= PAGE_BYTES or capacity % PAGE_BYTES or capacity > MAX_CAPACITY:
            raise ValueError(
                f"DRAM capacity {capacity!r} must be a multiple of {PAGE_BYTES} above one page and at most "
                f"{MAX_CAPACITY}"
            )
        self.capacity = capacity
        self._map = mmap.mmap(-1, capacity, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        #: The whole arena as a writable uint8 array; index = physical address.
        self.data = np.frombuffer(self._map, dtype=np.uint8)
        self._starts: list[int] = []  # sorted start addresses of live allocations
        # start and end (exclusive) of each, in the same order, flat (int64: bounds() copies it at once)
        self._bounds = array.array("q")
        self._bounds_array: tuple = (-1, None)  # (generation, bounds() of it)
        self._sizes: dict[int, int] = {}  # start -> requested bytes
        self._pages: dict[int, int] = {}  # start -> pages reserved
        self._free: list[tuple[int, int]] = []  # (pages, start) of freed blocks, sorted
        self._top = PAGE_BYTES  # next never-used address; page 0 stays invalid
        self._closed = False
        #: Goes up by one whenever the live allocations change (alloc, reserve, free, close), so a
        #: reader can tell that a range it checked earlier is still inside the same allocation.
        self.generation = 0

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Release the mapping. Views obtained earlier must not be used afterwards."""
        if not self._closed:
            self._closed = True
            self.generation += 1
            self.data = np.zeros(0, dtype=np.uint8)
            try:
                self._map.close()
            except BufferError:
                # A NumPy view made by a caller still exports the buffer; the mapping is
                # released when that view is garbage collected.
                pass

    def __enter__(self) -> "DRAM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def host_address(self) -> int:
        """Host virtual address of physical address 0 (for native code sharing the arena)."""
        self._check_open()
        return int(self.data.ctypes.data)

    def _check_open(self) -> None:
        if self._closed:
            raise AllocationError("this DRAM arena has been closed")

    # ---------------------------------------------------------------- allocation
    def alloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` and return the physical address (page aligned, never 0).

        Raises
        ------
        AllocationError
            If ``nbytes`` is not positive or the arena is exhausted.
        """
        self._check_open()
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise AllocationError(f"allocation size must be a positive integer, got {nbytes!r}")
        nbytes = int(nbytes)
        pages = -(-nbytes // PAGE_BYTES)
        i = bisect.bisect_left(self._free, (pages, 0))
        if i < len(self._free):
            got, start = self._free.pop(i)
            if got > pages:  # keep the tail of a larger block for later requests
                bisect.insort(self._free, (got - pages, start + pages * PAGE_BYTES))
        else:
            start = self._top
            if start + pages * PAGE_BYTES > self.capacity:
                used = sum(self._sizes.values())
                raise AllocationError(
                    f"DRAM arena of {self.capacity} bytes cannot hold another {nbytes} bytes "
                    f"({used} bytes live in {len(self._sizes)} allocations); free buffers or use a larger arena"
                )
            self._top = start + pages * PAGE_BYTES
        self._insert(start, nbytes)
        self._pages[start] = pages
        self.generation += 1
        return start

    def reserve(self, addr: int, nbytes: int) -> int:
        """Allocate ``nbytes`` at the page-aligned physical address ``addr`` (e.g. to replay a pack).

        Returns
        -------
        int
            ``addr``, now the start of a live allocation.

        Raises
        ------
        AllocationError
            If ``addr`` is not page aligned, is page 0, the range leaves the arena, or any of its
            pages is part of a live allocation.
        """
        self._check_open()
        addr, nbytes = int(addr), int(nbytes)
        if nbytes <= 0:
            raise AllocationError(f"allocation size must be a positive integer, got {nbytes!r}")
        if addr < PAGE_BYTES or addr % PAGE_BYTES:
            raise AllocationError(f"reserved address 0x{addr:x} must be a non-zero multiple of {PAGE_BYTES}")
        pages = -(-nbytes // PAGE_BYTES)
        end = addr + pages * PAGE_BYTES
        if end > self.capacity:
            raise AllocationError(f"range 0x{addr:x}..0x{end:x} leaves the {self.capacity}-byte DRAM arena")
        for start, size in self.allocations():
            if start < end and addr < start + self._pages[start] * PAGE_BYTES:
                raise AllocationError(
                    f"range 0x{addr:x}..0x{end:x} overlaps the live allocation 0x{start:x} ({size} bytes)"
                )
        # Every page in the range is now either above the top or in a freed block: split them.
        kept = []
        for blk_pages, blk in self._free:
            blk_end = blk + blk_pages * PAGE_BYTES
            if blk_end <= addr or blk >= end:
                kept.append((blk_pages, blk))
                continue
            if blk < addr:
                kept.append(((addr - blk) // PAGE_BYTES, blk))
            if blk_end > end:
                kept.append(((blk_end - end) // PAGE_BYTES, end))
        if addr > self._top:
            kept.append(((addr - self._top) // PAGE_BYTES, self._top))
        self._top = max(self._top, end)
        self._free = sorted(kept)
        self._insert(addr, nbytes)
        self._pages[addr] = pages
        self.generation += 1
        return addr

    def free(self, addr: int) -> None:
        """Free the allocation that starts at ``addr``.

        Raises
        ------
        AllocationError
            If ``addr`` is not the start of a live allocation.
        """
        self._check_open()
        if addr not in self._sizes:
            raise AllocationError(f"address 0x{int(addr):x} is not the start of a live DRAM allocation")
        pages = self._pages.pop(addr)
        del self._sizes[addr]
        i = bisect.bisect_left(self._starts, addr)
        del self._starts[i]
        del self._bounds[2 * i:2 * i + 2]
        self.generation += 1
        self._map.madvise(mmap.MADV_DONTNEED, addr, pages * PAGE_BYTES)
        # Coalesce with freed neighbours so that large requests can reuse the space.
        start, end = addr, addr + pages * PAGE_BYTES
        kept = []
        for blk_pages, blk in self._free:
            blk_end = blk + blk_pages * PAGE_BYTES
            if blk_end == start:
                start = blk
            elif blk == end:
                end = blk_end
            else:
                kept.append((blk_pages, blk))
        if end == self._top:  # the block is the highest: give it back to the top
            self._top = start
        else:
            kept.append(((end - start) // PAGE_BYTES, start))
        self._free = sorted(kept)

    def _insert(self, start: int, nbytes: int) -> None:
        """Record a new live allocation in the sorted starts, the flat bounds and the sizes."""
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._bounds[2 * i:2 * i] = array.array("q", (start, start + nbytes))
        self._sizes[start] = nbytes

    def bounds(self) -> np.ndarray:
        """The live allocations as a (k, 2) int64 array: start and end (exclusive) of each, in address order.

        Made once per :attr:`generation` and shared by every caller (a checker of many ranges reads it
        instead of calling :meth:`allocations`): read it, never write it.
        """
        cached = self._bounds_array
        if cached[0] != self.generation:
            k = len(self._starts)
            cached = self._bounds_array = (self.generation,
                                           np.frombuffer(self._bounds, np.int64, 2 * k).reshape(k, 2).copy())
        return cached[1]

    @property
    def live_bounds(self) -> array.array:
        """The live allocations' start and end (exclusive), flat (int64: start, end, start, ...), in
        address order: the allocator's own array, changed in place by every allocation and free (read
        it, never write it, and hold no buffer of it: a held buffer makes the next allocation fail).
        :meth:`bounds` is the same as a NumPy array; this one costs no NumPy call (compiled code that
        reads it per call, :func:`vta.sim.model.replay._timing_run_at`)."""
        return self._bounds

    def allocations(self) -> Iterator[tuple[int, int]]:
        """Yield ``(address, nbytes)`` of every live allocation in address order."""
        for s in self._starts:
            yield s, self._sizes[s]

    def size_of(self, addr: int) -> int:
        """Requested size of the allocation starting at ``addr``."""
        if addr not in self._sizes:
            raise AllocationError(f"address 0x{int(addr):x} is not the start of a live DRAM allocation")
        return self._sizes[addr]

    def find(self, addr: int) -> tuple[int, int] | None:
        """Return ``(start, nbytes)`` of the live allocation holding ``addr``, or None."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        size = self._sizes[start]
        return (start, size) if addr < start + size else None

    # ---------------------------------------------------------------- checked access
    def check(self, addr: int, nbytes: int, what: str = "access") -> None:
        """Require ``[addr, addr + nbytes)`` to lie inside one live allocation.

        Raises
        ------
        DRAMAccessError
            Naming ``what``, the range, and the allocation (if any) that holds ``addr``.
        """
        addr, nbytes = int(addr), int(nbytes)
        if nbytes <= 0:
            return
        found = self.find(addr)
        if found is None:
            raise DRAMAccessError(
                f"{what}: DRAM address 0x{addr:x} (+{nbytes} bytes) is not inside any live allocation"
            )
        start, size = found
        if addr + nbytes > start + size:
            raise DRAMAccessError(
                f"{what}: DRAM range 0x{addr:x}..0x{addr + nbytes:x} runs past the end of the allocation "
                f"0x{start:x}..0x{start + size:x} ({size} bytes)"
            )

    def view(self, addr: int, nbytes: int, dtype=np.uint8) -> np.ndarray:
        """A writable NumPy view of ``nbytes`` at ``addr`` (checked to lie in one allocation)."""
        self._check_open()
        self.check(addr, nbytes, "view")
        return self.data[addr:addr + nbytes].view(dtype)

    def write(self, addr: int, data) -> None:
        """Copy bytes (or any array, by its raw bytes) into DRAM at ``addr``."""
        buf = np.frombuffer(memoryview(np.ascontiguousarray(data)).cast("B"), dtype=np.uint8)
        self.view(addr, buf.size)[:] = buf

    def read(self, addr: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` out of DRAM at ``addr``."""
        return self.view(addr, nbytes).tobytes()

    def copy_in(self, addr: int, array: np.ndarray) -> None:
        """Copy a NumPy array into DRAM at ``addr`` (alias of :meth:`write`)."""
        self.write(addr, array)

    def copy_out(self, addr: int, shape, dtype) -> np.ndarray:
        """Return a new array of ``shape`` and ``dtype`` read from DRAM at ``addr``."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return self.view(addr, n).view(dtype).reshape(shape).copy()


_GLOBAL: DRAM | None = None


def global_dram() -> DRAM:
    """The process-wide arena shared by ``ext_dev`` arrays, the native runtime and the devices.

    Created on first use with :data:`DEFAULT_CAPACITY` bytes of address space.
    """
    global _GLOBAL
    if _GLOBAL is None or _GLOBAL._closed:
        _GLOBAL = DRAM(DEFAULT_CAPACITY)
    return _GLOBAL
