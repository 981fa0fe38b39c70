"""Generate the SystemVerilog package ``vta_pkg`` and define the RTL's host register map.

The RTL in ``hw/`` is parameterised by one package, ``vta_pkg``, generated here from an
:class:`~vta.env.Environment` and :func:`vta.isa.layout`. Every configuration parameter, every
instruction and micro-op field position, the opcode / memory-type / ALU codes and the register
map below are emitted into it, so a 2x16x16 core or a 4-bit core is a generated package, never a
hand edit of the RTL.

Host register map
-----------------
32-bit registers at byte addresses on the ``host_*`` port of ``vta_top``. "R/W" registers are
written by the host; "R" registers are written by the hardware (host writes are ignored).
Unmapped addresses read as 0.

======  ==============  ====  ==========================================================
addr    name            acc   meaning
======  ==============  ====  ==========================================================
0x00    CTRL            R/W   bit0 launch (rising edge starts fetch), bit1 finish, bit2 error.
                              FINISH writes 0b010; an error writes 0b110 and halts the core
                              until ``rst_ni`` (a launch while halted is ignored)
0x04    ECNT0           R     cycles from launch to the FINISH (or error) cycle
0x08    VAL0            R/W   instruction count
0x0C    PTR0            R/W   instruction base byte address (16-byte aligned)
0x10    PTR1..PTR5      R/W   upstream base pointers 1..5 (0x10..0x20): stored, not used
0x24    UCNT0           R     accumulator write count (one per GEMM/ALU uop) of the last run
0x28    STATUS          R     [7:0] error code (ERR_*), [15:8] field code (FIELD_*),
                              [19:16] unit code (UNIT_*) that raised it
0x2C    ERR_INSN        R     stream index of the faulting instruction
0x30    ERR_VALUE       R     the offending value (an index, an opcode, a channel id, ...)
0x34    ERR_LIMIT       R     the limit the value broke (buffer depth, 255 tokens, ...)
0x38    WATCHDOG        R/W   cycles without progress before ERR_WATCHDOG; 0 disables
0x3C    CONFIG          R     [3:0] LOG_BATCH, [7:4] LOG_BLOCK, [10:8] LOG_INP_WIDTH,
                              [13:11] LOG_WGT_WIDTH, [16:14] LOG_ACC_WIDTH; [31:24] 0xA5
0x40    BUSY_FETCH      R     cycles each unit spent executing (fetch: reading or
0x44    BUSY_LOAD             dispatching), this run
0x48    BUSY_COMPUTE
0x4C    BUSY_STORE
0x50    STALL_FETCH     R     cycles stalled: fetch on a full instruction queue, the other
0x54    STALL_LOAD            units on a dependency token
0x58    STALL_COMPUTE
0x5C    STALL_STORE
0x60    RETIRED_FETCH   R     instructions dispatched by fetch / retired by each unit,
0x64    RETIRED_LOAD          this run
0x68    RETIRED_COMPUTE
0x6C    RETIRED_STORE
0x70    TOKENS_L2G      R     tokens outstanding on each channel (persist across runs)
0x74    TOKENS_G2L
0x78    TOKENS_G2S
0x7C    TOKENS_S2G
0x80    INDEX_FETCH     R     stream index: next to dispatch (fetch); of the instruction
0x84    INDEX_LOAD            at the head of the unit's queue or executing (others)
0x88    INDEX_COMPUTE
0x8C    INDEX_STORE
0x90    FILL_LOAD       R     entries in each instruction queue
0x94    FILL_COMPUTE
0x98    FILL_STORE
0x9C    UNIT_STATE      R     4 bits per unit (fetch [3:0], load [7:4], compute [11:8],
                              store [15:12]): STATE_IDLE, STATE_WAIT_TOKEN, STATE_BUSY,
                              STATE_BLOCKED (fetch: instruction queue full)
0xA0    GEMM_UOPS       R     non-reset GEMM uops executed, this run (gemm_counter)
0xA4    ALU_UOPS        R     ALU uops executed, this run (alu_counter)
======  ==============  ====  ==========================================================

Error codes in STATUS[7:0]: ``ERR_NONE`` 0, ``ERR_INVALID_INSN`` 1, ``ERR_SRAM_INDEX`` 2,
``ERR_TOKEN_OVERFLOW`` 3, ``ERR_WATCHDOG`` 4. A watchdog with every unit that has work in
``STATE_WAIT_TOKEN`` (or fetch ``STATE_BLOCKED``) is a dependency deadlock.
"""

from __future__ import annotations

from ... import isa
from ...env import OPTION_KEYS, Environment
from ...errors import ConfigError

__all__ = [
    "BURST_BOUNDARY_BYTES",
    "BUS_BYTES",
    "ERROR_NAMES",
    "FIELD_NAMES",
    "INSN_QUEUE_DEPTH",
    "MAX_BURST_BEATS",
    "REGISTERS",
    "STATE_NAMES",
    "UNIT_NAMES",
    "WATCHDOG_DEFAULT",
    "sv_package",
]

# ------------------------------------------------------------------------------ register map
REG_CTRL = 0x00
REG_ECNT0 = 0x04
REG_VAL0 = 0x08
REG_PTR0 = 0x0C
REG_PTR1 = 0x10
REG_PTR2 = 0x14
REG_PTR3 = 0x18
REG_PTR4 = 0x1C
REG_PTR5 = 0x20
REG_UCNT0 = 0x24
REG_STATUS = 0x28
REG_ERR_INSN = 0x2C
REG_ERR_VALUE = 0x30
REG_ERR_LIMIT = 0x34
REG_WATCHDOG = 0x38
REG_CONFIG = 0x3C
REG_BUSY_FETCH = 0x40
REG_BUSY_LOAD = 0x44
REG_BUSY_COMPUTE = 0x48
REG_BUSY_STORE = 0x4C
REG_STALL_FETCH = 0x50
REG_STALL_LOAD = 0x54
REG_STALL_COMPUTE = 0x58
REG_STALL_STORE = 0x5C
REG_RETIRED_FETCH = 0x60
REG_RETIRED_LOAD = 0x64
REG_RETIRED_COMPUTE = 0x68
REG_RETIRED_STORE = 0x6C
REG_TOKENS_L2G = 0x70
REG_TOKENS_G2L = 0x74
REG_TOKENS_G2S = 0x78
REG_TOKENS_S2G = 0x7C
REG_INDEX_FETCH = 0x80
REG_INDEX_LOAD = 0x84
REG_INDEX_COMPUTE = 0x88
REG_INDEX_STORE = 0x8C
REG_FILL_LOAD = 0x90
REG_FILL_COMPUTE = 0x94
REG_FILL_STORE = 0x98
REG_UNIT_STATE = 0x9C
REG_GEMM_UOPS = 0xA0
REG_ALU_UOPS = 0xA4

#: Every register, name (without ``REG_``) -> byte address.
REGISTERS: dict[str, int] = dict(sorted(((k[4:], v) for k, v in globals().items()
                                    if k.startswith("REG_") and isinstance(v, int)), key=lambda kv: kv[1]))

CTRL_LAUNCH = 1 << 0
CTRL_FINISH = 1 << 1
CTRL_ERROR = 1 << 2

CONFIG_MAGIC = 0xA5

# Error codes (STATUS[7:0]).
ERR_NONE = 0
ERR_INVALID_INSN = 1
ERR_SRAM_INDEX = 2
ERR_TOKEN_OVERFLOW = 3
ERR_WATCHDOG = 4
ERROR_NAMES = {ERR_NONE: "none", ERR_INVALID_INSN: "invalid instruction", ERR_SRAM_INDEX: "SRAM index out of range",
               ERR_TOKEN_OVERFLOW: "token overflow", ERR_WATCHDOG: "watchdog (no progress)"}

# Field codes (STATUS[15:8]): what ERR_VALUE is.
FIELD_NONE = 0
FIELD_OPCODE = 1          # instruction opcode (5..7 are invalid)
FIELD_MEMORY_TYPE = 2     # memory_type of a LOAD/STORE not executable by its stage
FIELD_ALU_OPCODE = 3      # ALU opcode 5..7 (without 5 with the option ALU_REQUANT, 6 with ALU_MOV)
FIELD_DEP_FLAGS = 4       # a dependency flag naming a channel the stage does not have (value: flags [6:3])
FIELD_PAD = 5             # a STORE with non-zero padding (value: the four pads, y_pad_0 in [3:0])
FIELD_UOP_INDEX = 6       # uop index (uop_bgn..uop_end-1) >= uop depth
FIELD_INP_INDEX = 7       # inp row index >= inp depth
FIELD_WGT_INDEX = 8       # wgt row index >= wgt depth
FIELD_ACC_INDEX = 9       # acc row index (GEMM/ALU dst or ALU src, STORE source) >= acc depth
FIELD_SRAM_END = 10       # a LOAD's sram_base + padded rows*cols (the end) > depth of its buffer
FIELD_CHANNEL = 11        # token channel (CHAN_*) that would exceed 255 tokens
FIELD_NAMES = {FIELD_NONE: "none", FIELD_OPCODE: "opcode", FIELD_MEMORY_TYPE: "memory_type",
               FIELD_ALU_OPCODE: "alu_opcode", FIELD_DEP_FLAGS: "dependency flags", FIELD_PAD: "pad",
               FIELD_UOP_INDEX: "uop index", FIELD_INP_INDEX: "inp index", FIELD_WGT_INDEX: "wgt index",
               FIELD_ACC_INDEX: "acc index", FIELD_SRAM_END: "sram_base + size", FIELD_CHANNEL: "token channel"}

# Unit codes (STATUS[19:16]).
UNIT_NONE = 0
UNIT_FETCH = 1
UNIT_LOAD = 2
UNIT_COMPUTE = 3
UNIT_STORE = 4
UNIT_TOKENS = 5
UNIT_WATCHDOG = 6
UNIT_NAMES = {UNIT_NONE: "none", UNIT_FETCH: "fetch", UNIT_LOAD: "load", UNIT_COMPUTE: "compute",
              UNIT_STORE: "store", UNIT_TOKENS: "tokens", UNIT_WATCHDOG: "watchdog"}

# Token channels (value of FIELD_CHANNEL), in the order of the TOKENS_* registers.
CHAN_L2G = 0
CHAN_G2L = 1
CHAN_G2S = 2
CHAN_S2G = 3
CHANNEL_NAMES = {CHAN_L2G: "l2g", CHAN_G2L: "g2l", CHAN_G2S: "g2s", CHAN_S2G: "s2g"}

# Unit states (UNIT_STATE nibbles).
STATE_IDLE = 0
STATE_WAIT_TOKEN = 1
STATE_BUSY = 2
STATE_BLOCKED = 3
STATE_NAMES = {STATE_IDLE: "idle", STATE_WAIT_TOKEN: "waiting for a token", STATE_BUSY: "busy",
               STATE_BLOCKED: "blocked on a full queue"}

# Microarchitecture constants (not part of the JSON configuration).
BUS_BYTES = 8                 # 64-bit memory beats
MAX_BURST_BEATS = 16          # bursts of at most 16 beats ...
BURST_BOUNDARY_BYTES = 128    # ... that never cross a 128-byte boundary
INSN_QUEUE_DEPTH = 512        # entries of each of the three instruction queues
WATCHDOG_DEFAULT = 1 << 16    # reset value of the WATCHDOG register
TOKEN_MAX = 255               # tokens a channel may hold


def _check_supported(env: Environment) -> None:
    for name in ("INP", "WGT", "ACC", "OUT"):
        nbytes = getattr(env, f"{name}_ELEM_BYTES")
        if nbytes % BUS_BYTES:
            raise ConfigError(
                f"the RTL moves whole {BUS_BYTES}-byte beats, but a {name} element of {env.MODEL!r} is "
                f"{nbytes!r} bytes; accepted: element sizes that are multiples of {BUS_BYTES} bytes")
    if env.ACC_8BIT_ELEM_BYTES % BUS_BYTES:
        raise ConfigError(
            f"an ACC_8BIT element of {env.MODEL!r} is {env.ACC_8BIT_ELEM_BYTES!r} bytes; the RTL accepts "
            f"multiples of {BUS_BYTES} bytes (BATCH*BLOCK_OUT >= 8)")


def _sv_ident(name: str) -> str:
    return name.upper()


def sv_package(env: Environment) -> str:
    """Return the text of ``package vta_pkg`` for one configuration.

    Parameters
    ----------
    env : Environment
        The configuration; field positions come from :func:`vta.isa.layout`.

    Returns
    -------
    str
        SystemVerilog source of the package (one file, ``vta_pkg.sv``).

    Raises
    ------
    ConfigError
        If an element of the configuration is not a whole number of 64-bit bus beats, which the
        RTL's load and store units need.
    """
    _check_supported(env)
    lay = isa.layout(env)
    lines = [
        "// Generated by vta.sim.tsim.hwgen.sv_package from the configuration",
        f"// {env.MODEL}. Do not edit: regenerate it.",
        "package vta_pkg;",
        "",
        "  // ---------------------------------------------------------------- configuration",
    ]

    def lp(name: str, value: int, comment: str = "") -> None:
        tail = f"  // {comment}" if comment else ""
        lines.append(f"  localparam int unsigned {name} = {value};{tail}")

    for key in ("LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_OUT_WIDTH", "LOG_BATCH",
                "LOG_BLOCK", "LOG_BLOCK_IN", "LOG_BLOCK_OUT", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE",
                "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE", "LOG_OUT_BUFF_SIZE",
                "INP_WIDTH", "WGT_WIDTH", "ACC_WIDTH", "OUT_WIDTH", "BATCH", "BLOCK_IN", "BLOCK_OUT",
                "INP_ELEM_BITS", "WGT_ELEM_BITS", "ACC_ELEM_BITS", "OUT_ELEM_BITS", "UOP_ELEM_BITS",
                "INS_ELEM_BITS", "INP_ELEM_BYTES", "WGT_ELEM_BYTES", "ACC_ELEM_BYTES", "OUT_ELEM_BYTES",
                "UOP_ELEM_BYTES", "INS_ELEM_BYTES", "ACC_8BIT_ELEM_BYTES",
                "LOG_UOP_BUFF_DEPTH", "LOG_INP_BUFF_DEPTH", "LOG_WGT_BUFF_DEPTH", "LOG_ACC_BUFF_DEPTH",
                "UOP_BUFF_DEPTH", "INP_BUFF_DEPTH", "WGT_BUFF_DEPTH", "ACC_BUFF_DEPTH"):
        lp(key, getattr(env, key))
    lines += ["", "  // ---------------------------------------------------------------- hardware options (1: on)"]
    for key in OPTION_KEYS:
        lp(key, int(getattr(env, key)))
    lines += ["", "  // ---------------------------------------------------------------- bus and queues"]
    lp("BUS_BYTES", BUS_BYTES, "bytes per memory beat")
    lp("BUS_BITS", BUS_BYTES * 8)
    lp("MAX_BURST_BEATS", MAX_BURST_BEATS)
    lp("BURST_BOUNDARY_BYTES", BURST_BOUNDARY_BYTES, "a burst never crosses this boundary")
    lp("INSN_QUEUE_DEPTH", INSN_QUEUE_DEPTH)
    lp("WATCHDOG_DEFAULT", WATCHDOG_DEFAULT)
    lp("TOKEN_MAX", TOKEN_MAX)
    lp("INSN_BITS", 128)
    lp("UOP_BITS", 32)
    lp("LOOP_ITER_WIDTH", lay.field("gemm", "iter_out").width)

    lines += ["", "  // ---------------------------------------------------------------- instruction fields",
              "  // <FORMAT>_<FIELD>_LO: least significant bit in the 128-bit instruction; _W: width."]
    for kind, fields in (("MEM", lay.mem), ("GEMM", lay.gemm), ("ALU", lay.alu), ("UOP", lay.uop)):
        if kind != "UOP" and kind != "MEM":
            fields = [f for f in fields if f not in lay.header]
        if kind == "UOP":
            lines.append("  // micro-op fields (32-bit word)")
        for f in fields:
            stem = "INSN" if kind == "MEM" and f in lay.header else kind
            base = f"{stem}_{_sv_ident(f.name)}"
            lp(f"{base}_LO", f.lo)
            lp(f"{base}_W", f.width, "signed" if f.signed else "")

    lines += ["", "  // ---------------------------------------------------------------- codes"]
    for name in ("OPCODE_LOAD", "OPCODE_STORE", "OPCODE_GEMM", "OPCODE_FINISH", "OPCODE_ALU",
                 "MEM_UOP", "MEM_WGT", "MEM_INP", "MEM_ACC", "MEM_OUT", "MEM_ACC_8BIT",
                 "ALU_MIN", "ALU_MAX", "ALU_ADD", "ALU_SHR", "ALU_MUL", "ALU_REQ"):
        lp(name, getattr(isa, name))
    lp("ALU_OPCODE_MOV", isa.ALU_MOV, "ALU_MOV is the hardware option's key")

    lines += ["", "  // ---------------------------------------------------------------- host registers"]
    g = globals()
    for name in sorted((k for k in g if k.startswith("REG_") and isinstance(g[k], int)), key=lambda k: g[k]):
        lines.append(f"  localparam logic [7:0] {name} = 8'h{g[name]:02X};")
    for prefix in ("CTRL_", "ERR_", "FIELD_", "UNIT_", "CHAN_", "STATE_"):
        lines.append("")
        for name in sorted((k for k in g if k.startswith(prefix) and isinstance(g[k], int)), key=lambda k: g[k]):
            lp(name, g[name])
    lp("CONFIG_MAGIC", CONFIG_MAGIC)
    lines += [
        "",
        "  // ---------------------------------------------------------------- helpers",
        "  // End of a LOAD's padded rectangle in its buffer: sram_base + W * H, W = x_pad_0 + x_size",
        "  // + x_pad_1, H = y_pad_0 + y_size + y_pad_1 (48 bits: the product of two 17-bit sums).",
        "  // It reads only the geometry fields of the instruction it is given.",
        "  /* verilator lint_off UNUSEDSIGNAL */",
        "  function automatic logic [47:0] mem_padded_end(logic [INSN_BITS-1:0] insn);",
        "    return 48'(insn[MEM_SRAM_BASE_LO +: 16])",
        "         + (48'(insn[MEM_X_PAD_0_LO +: 4]) + 48'(insn[MEM_X_SIZE_LO +: 16])",
        "            + 48'(insn[MEM_X_PAD_1_LO +: 4]))",
        "         * (48'(insn[MEM_Y_PAD_0_LO +: 4]) + 48'(insn[MEM_Y_SIZE_LO +: 16])",
        "            + 48'(insn[MEM_Y_PAD_1_LO +: 4]));",
        "  endfunction",
        "  /* verilator lint_on UNUSEDSIGNAL */",
        "",
        "  // Beats of a DRAM burst starting at beat `beat` of its burst boundary with `rem` beats left",
        "  // to move: the rest, at most up to the boundary (the read engines and the store).",
        "  function automatic logic [31:0] mem_burst_beats(logic [3:0] beat, logic [31:0] rem);",
        "    logic [31:0] beats;",
        "    beats = 32'(MAX_BURST_BEATS) - 32'(beat);",
        "    return (rem < beats) ? rem : beats;",
        "  endfunction",
        "",
        "endpackage : vta_pkg",
        "",
    ]
    return "\n".join(lines)
