"""tsim throughput: simulated cycles per second, the RTL's fetch and store rates, and the build time.

Run from the repository root::

    python benchmarks/tsim_throughput.py [--repeats 5] [--build-repeats 1] [--skip-build] [--quick]
                                         [--no-callgrind]

``--quick`` (the test suite's smoke run) measures small programs once and skips the clean build
and the instruction counts.

Figures (medians over the repeats; the machine is shared, so expect noise), each printed next to
the figure measured on the tree before the RTL and shim work of issue 12 (:data:`BEFORE`, stored
with its date; that tree is gone, so it is not re-measured here):

* simulated cycles/s of a ResNet-18 layer (C11 with its bias epilogue, compiled by ``vta.topi``,
  default configuration), over the wall time and over the CPU time of the native run loop (the
  second is less disturbed by other load; the machine has two cores shared by many jobs);
* simulated cycles/s on a GEMM-heavy program;
* cycles per instruction of fetch on an instruction-bound stream: no-ops rotating over the load,
  compute and store units, so that no unit (1 cycle per no-op) is the bottleneck; the bus
  bound is 2 (two 64-bit beats per instruction);
* cycles per element of a long STORE: the difference between a store of 2 N and of N elements,
  divided by N; the bus bound is OUT_ELEM_BYTES / 8;
* cycles per uop of one long GEMM instruction (the bar is within 5% of one uop per cycle);
* the time to build the hardware library from a clean cache (a temporary cache directory);
* host instructions per simulated cycle on C11 and on the GEMM-heavy program, when valgrind is
  installed: one run of each in a child process under ``valgrind --tool=callgrind``, counting only
  the instructions of the Verilated model's evaluation (the DPI calls it makes included; the
  Python around the run excluded), divided by the cycles of the run. Unlike the rates, these
  counts do not depend on the machine's load. A C11 run under callgrind takes a few minutes.

Where the time goes (``perf`` on ResNet-18 C11, 2026-11-25): on main, 31% of the native time
was one ``memcpy`` per evaluation of the three 512-entry instruction queues into the sampled
copy of a concurrent assertion (now an immediate one), then the combinational merge and read
muxes of the 2048-bit weight and 1536-bit accumulator SRAMs, evaluated every cycle (now only
for active ports, on the clock edge). A second pass (same day) found three more: Verilator's
``$signed()`` extension of the GEMM operands (five instructions per operand, 512 operands a
cycle: a quarter of the native time; now written as ``(x ^ sign) - sign``, one instruction),
the clearing of the SRAM merge function's wide locals on every edge (7%; now a module
variable), the baseline SSE2 code of the vectorised GEMM lanes (AVX2 when the CPU has
x86-64-v3: about 15%), and the evaluation of the falling clock edge, to which nothing reacts
(now recorded without an evaluation: about 5%). What remains is flat: the Verilated
combinational logic about 40% of the native time, the clocked processes about 50% (the SRAM
ports of the weight and accumulator rows the largest single part, about 11%), the evaluation
bookkeeping and assertion sampling about 6%, the DPI calls (host port and cycle count every
cycle, memory only when a request or beat is pending) about 3%.

A third pass (2026-11-25, main at 41e0f80; instructions counted with ``valgrind --tool=callgrind``
on one C11 run, which unlike the timings is not disturbed by the machine's load): 5,400
instructions per simulated cycle in the model's evaluation, of which the 2048-bit weight SRAM's
write path was about 300 (every 64-bit beat the load unit delivered copied, merged and committed
the whole row: now a write stores its enabled lanes in place, and the read ports sample the
storage after the write, which is write-first without a bypass mux), ``Vvta_tsim_top::eval()``'s
end-of-evaluation bookkeeping about 190 (the shim now calls the root evaluation directly), the
ALU's sixteen lanes about 90 although the ALU was idle (their operand selection was continuous
assignments; now every lane is inside the enable), and the DPI calls of the cycle count and the
idle host port about 30 (the shim counts cycles itself and polls the host port only while an
access is open). After it: about 4,750 instructions per cycle (-12%), and tsim about a quarter
faster per CPU second (medians of runs interleaved in one process, at load averages of 3 to 5:
C11 1.37 M before and 1.71 M after over 12 runs, 1.31 M and 1.59 M over 15 in a second
session; the GEMM-heavy program 1.50 M and 1.99 M over 9). The clean build takes about 20 s
(21 s of compiler CPU time) when the two cores are free, 32 s under a load average of 4. Where the 4,750 go now,
still flat: the GEMM's 256 multiply-adds about 790
(17%; GCC vectorises them with 32-bit multiplies, most of the rest is extracting the bytes of
the packed operand rows), the clocked processes about 1,600 (34%: above all the three
sequencers' and the compute unit's decoding of their 128-bit instruction registers every
cycle, the two read DMA engines and the three instruction FIFOs), the combinational logic
outside the GEMM about 1,100 (24%), the 26 concurrent assertions about 560 (12%: 385 to check
them, 171 to copy the sampled values they read), the SRAM ports and queue writes about 420
(9%), the evaluation's trigger bookkeeping about 130 and the memory DPI about 100. Tried and not
kept: Verilator's -O3, --inline-mult -1, -fcf-protection=none, -fno-semantic-interposition
and -fno-plt (all within the noise), ``--threads 2`` (ten times slower on two shared cores),
the VCR's register file updated in its clocked process (0.4% fewer instructions), the
same-cycle concurrent assertions of the units other than compute and the sequencer written as
immediate assertions on the clock edge (0.5% fewer: the sampled copies go, but the immediate
checks cost more than the concurrent ones did), and GCC
profile-guided optimisation (+10-17% when applied by hand, but an instrumented build, a
profiling run and a second build would double the 25-30 s clean build).

A fourth pass (2026-11-26, main at 6130762; callgrind on one C11 run as above): 4,654
instructions per simulated cycle before, 4,194 after (-9.9%; the GEMM-heavy program -9.9%). A
build with Verilator's ``--no-assert`` showed the checks cost 726 of the 4,654. Kept: (1) every
same-cycle concurrent assertion is a labelled immediate assertion on the clock edge, behind one
test of all the module's checks, so the labelled assertions (and Verilator's ``assertOnGet``
call) run only on a failing edge and no sampled copies are kept; ReqHeld and WriteHeldWhenFull
look one edge back through registers of their own (the evaluation's sampling went from 229 to 80
instructions a cycle; only ReadWhenEmpty stays concurrent, since the assertion test edits its
text: written like the others it saves another 29), and HeadHeld compares the queue head only
while an instruction executes (-26); (2) registers that rarely change are enabled registers: the sequencers'
instruction copy
(loaded when taken), the VCR's host-written and error registers, the store's and the two read
engines' registers outside their work, the memory engine's response data; the VCR decodes its
register map only for a read; (3) an SRAM write of a whole row (the GEMM results, padding) stores
it at once, other writes test the lanes in groups of eight (a 64-bit beat into a 32-lane weight
row: 12 tests, not 32); (4) ``--expand-limit`` set to the words of an accumulator row
(:func:`vta.sim.tsim.library.expand_limit`, 16 here), so the copy of the 2048-bit weight row
into its read register is a loop the compiler vectorises (-93 a cycle); (5) the take-cycle
checks (skip, range checks, the padded-area multiplies) inside ``if (decode)`` (-54; Verilator's
DFG turns most such conditions back into masks, so the multiplies still run). Tried and dropped:
``--no-assert-case`` (the unique-case checks; within the noise), reading the SRAMs through a
registered address (Verilator then copies the row in the combinational code; +0.3%),
``-fno-dfg`` (+18%), ``--expand-limit`` 8 or 4 (+12%, +8%: the accumulator rows become loops).
Per CPU second, medians of runs interleaved in one process (the library of main at 6130762
and this one): C11 2.04 M before and 2.26 M after over 25 runs each at a load average of 2, 1.52 M
and 1.68 M over 15 at a load average of 4; the GEMM-heavy program 2.28 M and 2.55 M, 1.78 M and
1.99 M (at 4,220 a cycle, before the HeadHeld change); with the final tree, at a load average
below 1 but with runs of one library varying twofold, C11 1.30 M and 1.54 M (25 runs), 1.56 M and
1.70 M (31 runs; the fastest runs 2.08 M and 2.33 M), the GEMM-heavy program 1.70 M and 2.00 M,
1.46 M and 1.79 M. The clean build took 19 s (27 s with nothing cached) at a load average of 2. Where the 4,220
went: the GEMM about 750 (GCC extracts and sign-extends every operand byte from 32-bit words: about
3 instructions per multiply-add), the combinational control about 1,900, the clocked processes
about 1,200, the checks about 590 of all these (a ``--no-assert`` build: 3,634; the largest
part, about 180, is HeadHeld's compare of the 160-bit queue heads in every executing cycle, then
the FIFOs' ReadWhenEmpty, about 125), the evaluation's bookkeeping 80 and the memory DPI 60.
Before the pass tsim ran C11 at 2.1 M cycles per CPU second on a quiet machine (about 9.8 G
instructions a second), so 3 M needs about 3,300 instructions a cycle: a GEMM on operands stored
as byte arrays (a vectorised dot product, about 150 instead of 750), the units' fields decoded
once into narrow registers rather than from the 128-bit instruction every cycle, and a cheaper
HeadHeld (for instance with the units reading the queue head, which stays in place, instead of
a copy) are the levers left.

A fifth pass (2026-12-07, main at 846e14a; callgrind as printed by this script, which counts the
instructions of the model's evaluation, DPI calls included, over one run): 4,194 instructions per
simulated cycle on C11 and 3,969 on the GEMM-heavy program before, 3,880 and 3,642 after (-7.5%,
-8.2%; cycle counts unchanged). GEMM uops run in 97% of C11's cycles, so the GEMM core is
evaluated nearly every cycle: it now copies its operand rows into arrays of elements (byte copies
the compiler merges into word moves) and keeps each dot product a loop in the generated C++
(``unroll_disable``), which GCC vectorises; the products and sums are the same bits as before.
The core's share went from about 770 to about 550 instructions a cycle. Per CPU second (this script, five
runs of each library one after the other at a load average of about 12, so only indicative):
C11 3.00 M before and 3.88 M after, the GEMM-heavy program 3.79 M and 4.13 M. Measured and not kept:
Verilator's ``--no-assert-case`` (the unique-case checks, which cannot fail here: every
``unique case`` has a default and distinct constant items; -21 a cycle), the profiler's probe
flags assembled inside its enabled branch and the memory engine's request mux written in its
priority loop (together +17), and in a stand-alone GEMM model: the products kept in an array
before the sum (-4%), both loops kept (+140%), the row dot product as a non-inlined function
(+400%). Where the 3,880 go, by module of the signals each statement reads (a rough split): the
GEMM about 550, the compute unit's control about 510, the three instruction queues 300, fetch
210 and store 340 (both idle in almost every cycle of C11, but their combinational logic is
evaluated every cycle), the two read engines 380, the load sequencer 175, the memory engine 180,
the VCR's counters 140, the token counters and the status vectors of the VCR and the probe about
250. It is flat: no statement costs more than about 40 instructions a cycle. The issue's bar of
2,000 needs the idle units' logic not evaluated at all, which Verilator does only for logic in a
clocked process under an enable (its DFG turns conditions in combinational logic back into
masks): for instance the store, fetch and the read engines writing their next state in their
clocked processes under a busy enable, and the GEMM operands read from SRAMs that hold
elements rather than packed rows.

A sixth pass (2026-12-07, main at 8cf055e; callgrind as printed by this script): 3,880
instructions per simulated cycle on C11 and 3,642 on the GEMM-heavy program before, 3,638 and
3,404 after (-6.2%, -6.5%; cycle counts unchanged). The idle units' next-state logic moved into
their clocked processes under an enable, the only place Verilator skips it; one commit per unit,
each measured on the GEMM-heavy program with the previous ones applied: the store's burst walk,
element reader and beat stream under ``start || exec`` and its lane truncation inside the
buffer's write enable (3,642 to 3,614), fetch's next state written per state and its head decoded
only while one is buffered (3,583), the read engines' request generator, data consumer and pad
walker under ``start || busy`` (3,573), then the token counters updated under their push or pop
and the three instruction FIFOs' pointers and count under push and pop (together 3,404). Tried
and not kept: the sequencers handing their unit the queue head (which stays in place, as HeadHeld
checks) instead of a mux between the head and the kept copy (+32). A per-line profile (callgrind
``--dump-line=yes`` on a library built with ``-CFLAGS -g``, its generated C++ kept) shows what
is left, still flat: statements of 2 to 8 instructions spread over every unit, ``__Vdly__``
copies of registers made every cycle outside their enables, the compute unit's control (about
470 on the GEMM-heavy program; not touched here, another branch changes that file) and the GEMM
core (about 440). The issue's bar of 2,000 is not reached.

A seventh pass (2026-12-07, main at 26dcadf; callgrind as printed by this script): 3,638
instructions per simulated cycle on C11 and 3,404 on the GEMM-heavy program before, 3,333 and
3,015 after (-8.4%, -11.4%; cycle counts unchanged, 465,169 and 68,544). One commit per change,
each measured on the GEMM-heavy program with the previous ones applied: the SRAM read ports
written with constant indices (Verilator copied a port indexed by the loop variable twice, through
a bounds-checked temporary: 3,377), ReadWhenEmpty, the last concurrent assertion, a guarded
immediate one like the others (3,338), the token counts updated and PopNeedsToken tested under one
enable for the four channels (3,266), the sequencers' ``unique case`` on their state written as
plain ``case`` (distinct constant items and a default, so the uniqueness checks could never fail,
but Verilator evaluated them every cycle: 3,204), then the checks of the memory engine (3,155), the
load, the store and the read engines (3,066), the sequencers (3,053) and the FIFOs (3,028)
computed as automatic variables of the clocked check process, only in an edge with the event they
are about (a continuous assignment is computed every cycle, and Verilator's DFG folds an enable
around it back into a mask), and the tokens' availability flags registers that move with the
counts (3,015). Measured and not kept: the VCR's counters written in their clocked process (+72;
its read decode alone in the clocked process, +16), the GEMM's products computed at the
accumulator width (+17), and C++ flags ``-fno-tree-slp-vectorize`` (+11), ``-fvect-cost-model=cheap``
(no change), ``-funroll-loops`` (-11, left out for so little), ``-fno-tree-vectorize`` (+1,600).
``-march=native`` cannot be counted: this machine's CPU has AVX-512, which valgrind 3.19 does not
run. A per-statement profile of the GEMM-heavy program after the pass (callgrind
``--dump-line=yes``, ``-CFLAGS -g``) still shows no statement above about 50 instructions a cycle:
the GEMM core about 550 (GCC vectorises each row's dot product over 128-bit lanes with 16-bit
products, about 25 instructions a row, and copies the weight row into bytes, about 115), the
compute unit about 470 and vta_top's status vectors about 350 (not touched here: other branches
change those files), the two read engines about 400 (their geometry re-derived from the
instruction every cycle), the memory engine's grant table and request mux about 65, the
probe's flags about 40. The issue's bar of 2,000 is not reached.

An eighth pass (2026-12-07, main at be6262a; callgrind as printed by this script): 3,338
instructions per simulated cycle on C11 and 3,020 on the GEMM-heavy program before, 3,171 and
2,860 after (-5.0%, -5.3%; cycle counts unchanged, 465,169 and 68,544). One commit per change,
each measured on the GEMM-heavy program with the previous ones applied: the read engine's
geometry (row width and height, pad bounds, strides, element shape) latched into registers when a
load starts instead of re-derived from the 128-bit instruction every cycle (2,977); the compute
unit's and the load's fields of the executing instruction (the load destination, the GEMM / ALU
loop bounds, factors and operation) latched at start, the instruction decoded only in the cycle
it is taken (2,954); the instruction queues' head a register updated on a pop or a push into an
empty queue instead of an index into the 512-entry storage every cycle (2,944); the units reading
the queue head, which stays in place until the instruction retires, instead of a 128-bit mux
between the head and the sequencer's copy (2,921; HeadHeld still compares the two); a LOAD's
padded area multiplied out in the load's and compute's decode block (``vta_pkg::mem_padded_end``),
which Verilator keeps a branch, instead of in the read engine's enabled output, which its DFG
turned back into a multiply every cycle (2,860). Measured and not kept: the VCR's BUSY and STALL
counters kept as closed stretches plus the open one (registers that change only when a unit
changes state, the sum formed on a host read; +106, the per-unit compare and the stretch
bookkeeping cost more than the increments), the probe's flags assembled inside its enabled
branch (+10; the DFG shares that vector with the memory engine's routing), Verilator's
``-fno-dfg-scoped`` (+189) and ``-fno-dfg-push-down-sels`` (+6). The issue's bar of 2,000 is not
reached: the profile stays flat (the GEMM core about 420 of the 2,860, every other statement
below about 40).

A ninth pass (2026-12-07, main at 941e530; callgrind as printed by this script): 3,171
instructions per simulated cycle on C11 and 2,860 on the GEMM-heavy program before, 2,913 and
2,574 after (-8.1%, -10.0%; cycle counts unchanged, 465,169 and 68,544). One commit per change, each
measured on the GEMM-heavy program with the previous ones applied: the shim evaluates the rising
clock edge itself, computing the edge's triggers and running the triggered processes once, instead
of through the root evaluation, whose scheduling loop computes the triggers a second time to find
none (2,826; the count is now taken in the shim's ``vta_tsim_rising_edge``, which holds either
path); the read engines' walkers read every register of their clocked process into an automatic
copy before assigning any (2,711). Verilator keeps a ``__Vdly__`` shadow of a register that its
process reads after an assignment to it (in the text, even in exclusive branches), copied in at the
top of the clocked code and back at its end every cycle, enabled or not: 56 registers had one,
about 190 instructions a cycle. The same for the store and for fetch, whose FeRun branch comes
first (2,680; 14 shadows left, of registers read by another process); then the read engines',
the store's and fetch's burst length and the pad walker's data-row flag as registers written with
the values they derive from, instead of continuous assignments computed every cycle (2,611 for the
read engines, 2,574 with the store and fetch). Measured and not kept: the memory engine's read
request mux computed only with a request (+4; the DFG keeps a mask), the VCR's counters as enabled
registers of an unpacked array (+47), the GEMM's dot products over the output channels instead of
the inputs (no gain in a C++ model of the generated code), and Verilator's ``-fno-dfg-push-down-sels``
(+6), ``-fno-dfg-pre-inline``, ``-fno-dfg-post-inline`` (no change), ``-fno-lift-expr`` (+2) and
``-fno-table`` (+13). The issue's bar of 2,000 is not reached: the GEMM core (about 420) and the
units' control, flat, remain.

A tenth pass (2026-12-07, main at 1e50939; callgrind as printed by this script): 2,913
instructions per simulated cycle on C11 and 2,574 on the GEMM-heavy program before, 2,840 and
2,500 after (-2.5%, -2.9%; cycle counts unchanged, 465,169 and 68,544). Kept: the DRAM model's queue
of read bursts a ring instead of a ``std::deque`` (C11 2,902), and GCC profile-guided optimisation
of the library :func:`vta.sim.tsim.library.build` makes (:mod:`vta.sim.tsim.pgo`: an instrumented
build runs a training program of its own, rounds of a tiled GEMM with an ALU epilogue and
overlapping load, compute and store, in a child process; then the design and the shim are compiled
again with that profile; the clean build takes about 30 to 35 s instead of 20, and is cached like
the other; ``VTA_TSIM_PGO=0`` turns it off). Neither C11 nor the GEMM-heavy program is the training
program. The profile mostly orders branches and code, so it saves more time than instructions: per
CPU second, nine rounds of both libraries interleaved in one process at a load average of 3 to 4,
C11 4.72 M before and 5.05 M after (median pair ratio 1.075), the GEMM-heavy program 5.03 M and
5.30 M (1.096); a first version trained on C11 itself gave C11 1.117 and 2,839 a cycle. Measured and
not kept: link-time optimisation of the model and the shim (+43 a cycle on the GEMM-heavy program),
``-mtls-dialect=gnu2`` for the shim's thread-local model pointer (+2 on C11), the DRAM model's
request and write paths moved out of line (+1), ``-mprefer-vector-width=256`` (no change),
``-fvect-cost-model=unlimited`` (+793), the GEMM's dot products accumulated from operands
sign-extended to the accumulator width (+17, as in pass 7) or from operand arrays sign-extended to
16 bits in the copy (+986: the copy is then scalar). ``-march=native`` stays out: valgrind 3.19
cannot run this machine's AVX-512, so its effect cannot be counted, and x86-64-v3 (AVX2) is already
used when the CPU has it. Where the GEMM-heavy program's 2,574 went before the pass (callgrind
``--dump-line=yes``, ``-CFLAGS -g``, by the module of the signals a statement names): the GEMM core
418, the compute unit's control 356, vta_top's glue 248, the three instruction queues 222, the store
194 with its sequencer, fetch 131, the VCR 127, the memory engine 122, the load 121 with its
sequencer, the read engines 138, the weight SRAM's read copy 115 (32 pairs of 64-bit moves: the
compiler merges the byte copies but does not vectorise them); no statement above 55. On C11 the
DRAM model's DPI call adds about 80 a cycle (it runs in two cycles of three). The issue's bar of
2,000 is not reached.

An eleventh pass (2026-12-07, main at c6a4f5d; callgrind as printed by this script, profile-guided
builds): 2,840 instructions per simulated cycle on C11 and 2,500 on the GEMM-heavy program before,
2,706 and 2,443 after (-4.7%, -2.3%; cycle counts unchanged). Per change, counted on builds without
a profile and with ``-g`` (C11 2,902 and GEMM-heavy 2,573 before): the memory engine's checks
evaluated per event, so a cycle with only a read beat tests the response's id alone (C11 -30,
GEMM-heavy -4; without the outer guard of any event the GEMM-heavy program lost 8); the read
arbiter's address and length selected by constant client numbers inside the priority loop, only
in a cycle with a request (a mux indexed by the grant was evaluated every cycle: C11 -7.5,
GEMM-heavy -13); the compute unit's uop generator written under its conditions in the clocked
process instead of through ten next-state copies (C11 -6, GEMM-heavy -6); and a DPI function
without arguments, ``vta_dpi_mem_beat``, for the edges with read bursts outstanding and nothing to
hand over (most edges of a load: C11 -48, GEMM-heavy -3). Since ca293ff this script had measured
the library without a profile: importing ``tests.conftest`` set ``VTA_TSIM_PGO=0`` (it now keeps
the caller's setting). Measured and not kept: the weight SRAM read by a registered address, the
GEMM's element copy then reading the storage row (+396 on the GEMM-heavy program: the byte copies
from a row indexed by a register are no longer merged into word moves), the probe's flags packed
inside its DPI call (+12 GEMM-heavy, +17 C11: Verilator then keeps other shared terms alive). Not
built, from the generated code: the input and weight SRAMs kept as element arrays feeding the
GEMM's element ports (a registered element row becomes 256 delayed element writes; a read by a
registered address an element-by-element copy into the port). The GEMM core (about 430 a cycle on
both programs) is near what GCC makes of the dot products without a dot-product instruction (a
hand-written C++ equivalent with casts to ``int8_t`` is not cheaper); the rest stays flat. The
issue's bar of 2,000 is not reached.

A twelfth pass (2026-12-07, main at c477d9d) tried clock gating: fetch, the load (sequencer, read
engine, destination register) and the store each on a clock of their own from a latch-based
integrated clock gate (a latch transparent while the clock is low, AND-ed with it), on only in
cycles where the unit can change state, so that Verilator, which runs a process only when its
trigger fires, would skip the idle units. On C11 (465,169 cycles) fetch is busy in 5,719 cycles,
the store in 3,159 (its head waits for a g2s token in 461,563), the load in 314,656; on the
GEMM-heavy program fetch in 23, the store in 133, the load in 2,590. Cycle counts were unchanged
(``python -m vta regress --stages workloads`` passed on every configuration) and the fetch, load
and store cocotb tests and lint passed; the area grew by 12 cells (``python -m vta area``, default
configuration, fast mapping: 269,377 cells before, 269,389 after, flip-flops unchanged); but it is
slower and was not kept (callgrind, both clock edges counted): on ``-g`` builds without a profile,
C11 2,811 before and 3,041 after, the GEMM-heavy program 2,548 and 2,717; on profile-guided builds
(this script) C11 2,943 and the GEMM-heavy program 2,622, against 2,706 and 2,443 on main
(re-measured). Why, from the generated code: Verilator does give each gated clock a trigger of its
own, runs the gated processes only under it, and guards combinational logic by the union of the
triggers of the processes that write its inputs; but nearly every statement of a unit reads a
signal of another unit (the queue head and fill, the token flags, the memory engine's ready and
response, the accumulator read data, the VCR's halt), so its trigger set includes the free-running
clock and it still runs every cycle (the one block guarded by a gated clock alone, part of fetch's
head decode, costs 33 instructions when it runs). What gating does skip, the units' clocked
processes, earlier passes had already put under enables that cost a test each while the unit is
idle. Against that, the gates cost: the falling edge must be evaluated (the latches take their
enables while the clock is low), the gates' ``ico`` region runs on both edges, the trigger vector
is computed twice a cycle, and the latches are replicated into the ``nba`` region because their
enables are written there: 185 instructions a cycle of shim and scheduling with three gates against
36 without (125 with the store's gate alone), while the design's own code went from 2,512 to 2,532
a cycle on the GEMM-heavy program (the combinational logic split from 2 functions into 15 under 13
different trigger masks, the latch copies). A first enable, the queue not empty or an instruction
executing, kept the store's clock on in 68,445 of 68,557 edges of the GEMM-heavy program (a STORE
waits at the queue head for its token); the enable that also requires the pop token turned it on in
134. For gating to pay here a unit's logic would have to read other units' signals only inside its
gated processes, which changes the same-cycle handshakes (queue pop, token pop and push, memory
valid/ready) and so the cycle counts. The fallback, logic moved under an enable, has little left to
take: fetch's end-of-stream test and count updates computed in its FeRun branch instead of as
continuous assignments saved 2 instructions a cycle on the GEMM-heavy program, and its request
condition kept as a register written with the counts cost 3 more (neither kept). The prototype
(a ``vta_clock_gate`` module, the shim evaluating both edges without the scheduling loop, this
script counting both) is not in the tree. The issue's bar of 2,000 is not reached.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

# tests.conftest turns the profile-guided build off for the test suite (VTA_TSIM_PGO=0 unless set);
# this benchmark measures the library users get, so it keeps the caller's setting.
_PGO_SETTING = os.environ.get("VTA_TSIM_PGO")
from tests.conftest import make_env  # noqa: E402

if _PGO_SETTING is None:
    os.environ.pop("VTA_TSIM_PGO", None)
from tests.e2e import gemm_program  # noqa: E402
from vta import isa  # noqa: E402
from vta.dram import DRAM, global_dram  # noqa: E402
from vta.sim.tsim import TSim  # noqa: E402
from vta.sim.tsim import hwgen, library  # noqa: E402
from vta.testing.programs import ProgramBuilder  # noqa: E402

#: Figures of the tree before this work (main at 08ea605), measured on 2026-11-25 on this
#: machine kind with this script's methods (``--library`` on main's cached library; the build
#: time in a temporary cache) under the shared load of that day (load average 1 for the rates,
#: about 9 for the build). Main's Verilated core copied the three 512-entry instruction queues
#: into an assertion's sampled copy on every evaluation, fetch drained each burst before reading
#: the next, and the store read one accumulator row per element and waited for every burst's ack.
BEFORE = {
    "date": "2026-11-25",
    "resnet_c11_cycles": 473_037,
    "resnet_wall": 0.33e6,       # simulated cycles/s, native run loop, wall time
    "resnet_cpu": 0.32e6,        # simulated cycles/s, native run loop, CPU time
    "gemm_wall": 0.35e6,         # GEMM-heavy program (64 x 16 x 64), wall time
    "fetch_cpi": 3.25,           # no-ops over three units: 26 cycles per burst of 8
    "store_cpe": 3.27,           # 1 acc read + 2 beats per element, 2 cycles per burst's ack
    "build_s": 64.6,             # clean build (34 s of compiler CPU time), load average about 9
}

#: Figures of main at 41e0f80, the tree before the third profiling pass of the module docstring,
#: measured on 2026-11-25 with this script's methods on that tree's cached library (``--library``)
#: under a load average of 3 to 7 from other jobs, so per CPU second only (wall-time rates were
#: at times a tenth of these): medians of runs interleaved in one process with the library of the
#: tree after the pass (12 runs of C11, which gave 1.71 M after; 9 of the GEMM-heavy program, 1.99 M
#: after). Rates measured at different times on this machine differ by more than the pass gained.
BEFORE_PASS3 = {
    "tree": "41e0f80",
    "resnet_cpu": 1.37e6,        # simulated cycles/s, native run loop, CPU time
    "gemm_cpu": 1.50e6,          # GEMM-heavy program (64 x 16 x 64), CPU time
}

#: Host instructions per simulated cycle (callgrind, this script's method) of the tree before the
#: fifth pass (main at 846e14a, 2026-12-07).
BEFORE_PASS5 = {
    "tree": "846e14a",
    "resnet_ipc": 4194,          # ResNet-18 C11
    "gemm_ipc": 3969,            # GEMM-heavy program (64 x 16 x 64)
}

#: Host instructions per simulated cycle (callgrind, this script's method) of the tree before the
#: sixth pass (main at 8cf055e, 2026-12-07).
BEFORE_PASS6 = {
    "tree": "8cf055e",
    "resnet_ipc": 3880,          # ResNet-18 C11
    "gemm_ipc": 3642,            # GEMM-heavy program (64 x 16 x 64)
}

#: Host instructions per simulated cycle (callgrind, this script's method) of the tree before the
#: seventh pass (main at 26dcadf, 2026-12-07).
BEFORE_PASS7 = {
    "tree": "26dcadf",
    "resnet_ipc": 3638,          # ResNet-18 C11
    "gemm_ipc": 3404,            # GEMM-heavy program (64 x 16 x 64)
}

#: Host instructions per simulated cycle (callgrind, this script's method) of the tree before the
#: eighth pass (main at be6262a, 2026-12-07).
BEFORE_PASS8 = {
    "tree": "be6262a",
    "resnet_ipc": 3338,          # ResNet-18 C11
    "gemm_ipc": 3020,            # GEMM-heavy program (64 x 16 x 64)
}

#: Host instructions per simulated cycle (callgrind, this script's method) of the tree before the
#: ninth pass (main at 941e530, 2026-12-07).
BEFORE_PASS9 = {
    "tree": "941e530",
    "resnet_ipc": 3171,          # ResNet-18 C11
    "gemm_ipc": 2860,            # GEMM-heavy program (64 x 16 x 64)
}

BEFORE_PASS10 = {
    "tree": "1e50939",
    "resnet_ipc": 2913,          # ResNet-18 C11
    "gemm_ipc": 2574,            # GEMM-heavy program (64 x 16 x 64)
}

#: Host instructions per simulated cycle before the eleventh pass (profile-guided build, see above).
BEFORE_PASS11 = {
    "tree": "c6a4f5d",
    "resnet_ipc": 2840,          # ResNet-18 C11
    "gemm_ipc": 2500,            # GEMM-heavy program (64 x 16 x 64)
}

#: The function whose inclusive instruction count is the model's per-cycle work: the shim's
#: evaluation of the rising clock edge (the only edge it evaluates). Libraries built before that
#: function existed called the root evaluation of the Verilated model once per clock edge: their
#: count is that function's (:func:`_eval_function`).
_EVAL_FUNCTION = "*vta_tsim_rising_edge(*"
_EVAL_FUNCTION_OLD = "Vvta_tsim_top___024root___eval(*"


def _eval_function(lib: Path) -> str:
    """The callgrind function pattern of the per-cycle evaluation in ``lib``."""
    return _EVAL_FUNCTION if b"vta_tsim_rising_edge" in Path(lib).read_bytes() else _EVAL_FUNCTION_OLD


def _rate(cycles: float, seconds: float) -> float:
    return cycles / seconds if seconds > 0 else float("nan")


def resnet_rate(dev: TSim, env, repeats: int) -> tuple[float, float, int]:
    """(wall rate, CPU rate, cycles) of the native run loop on ResNet-18 C11, medians."""
    from vta.dse import workloads

    call = dev._call
    native = []

    def timed_call(name, *args):
        if name != "vta_tsim_run":
            return call(name, *args)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return call(name, *args)
        finally:
            native.append((time.perf_counter() - t0, time.process_time() - c0))

    dev._call = timed_call
    walls, cpus, cycles = [], [], 0
    try:
        for _ in range(repeats):
            native.clear()
            stats = workloads.run(workloads.get("resnet18.C11"), env, dev)
            cycles = int(stats["cycle_count"])
            wall, cpu = sum(w for w, _ in native), sum(c for _, c in native)
            walls.append(_rate(cycles, wall))
            cpus.append(_rate(cycles, cpu))
    finally:
        dev._call = call
    return statistics.median(walls), statistics.median(cpus), cycles


def cycles_per_second(dev: TSim, dram: DRAM, env, repeats: int, quick: bool = False) -> tuple[float, float, int]:
    m, k, reps = (8, 4, 4) if quick else (64, 16, 64)
    prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=1)
    rates, cpu_rates, cycles = [], [], 0
    try:
        for _ in range(repeats):
            dev.clear_stats()
            start_cycles = dev.cycles
            t0, c0 = time.perf_counter(), time.process_time()
            dev.run(prog.insn_addr, prog.insn_count)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            cycles = dev.cycles - start_cycles
            rates.append(_rate(cycles, wall))
            cpu_rates.append(_rate(cycles, cpu))
        if (prog.output(dram) != prog.expected).any():
            raise SystemExit("tsim computed a wrong result on the benchmark program")
    finally:
        prog.free(dram)
    return statistics.median(rates), statistics.median(cpu_rates), cycles


def _run_cycles(dev: TSim, addr: int, count: int) -> int:
    dev.clear_stats()
    dev.run(addr, count)
    return int(dev.stats()["cycle_count"])


def fetch_cycles_per_insn(dev: TSim, dram: DRAM, env, n: int) -> float:
    """Cycles per instruction of ``n`` no-ops rotating over the three units (fetch-bound):
    the difference between 2 n and n instructions, divided by n."""
    counts = []
    for total in (n, 2 * n):
        with ProgramBuilder(env, dram) as prog:
            stages = (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE)
            for i in range(total):
                prog.nop(stages[i % 3])
            prog.finish()
            counts.append(_run_cycles(dev, *prog.build()))
    return (counts[1] - counts[0]) / n


def store_cycles_per_elem(dev: TSim, dram: DRAM, env, n: int) -> float:
    """Cycles per element of one STORE of 2 n elements against one of n (rows of 64)."""
    counts = []
    cols = 64
    for total in (n, 2 * n):
        rows = total // cols
        with ProgramBuilder(env, dram) as prog:
            out = prog.buffer(nbytes=total * env.OUT_ELEM_BYTES)
            prog.store(sram_base=0, dram_addr=out, y_size=rows, x_size=cols, push_prev_dep=1)
            prog.finish(pop_next_dep=1)  # FINISH waits for the store
            counts.append(_run_cycles(dev, *prog.build()))
    return (counts[1] - counts[0]) / n


def gemm_cycles_per_uop(dev: TSim, dram: DRAM, env, repeats: int, quick: bool = False) -> tuple[float, int]:
    m, k, reps = (8, 4, 8) if quick else (32, 16, 32)
    ratios = []
    for _ in range(repeats):
        counts = []
        for r in (reps, 2 * reps):
            prog = gemm_program.build(env, dram, m=m, k=k, reps=r, seed=2)
            try:
                dev.clear_stats()
                dev.run(prog.insn_addr, prog.insn_count)
                counts.append(dev.stats()["cycle_count"])
            finally:
                prog.free(dram)
        ratios.append((counts[1] - counts[0]) / (m * k * reps))
    return statistics.median(ratios), m * k * reps


def build_seconds(env, repeats: int) -> tuple[float, float]:
    """Median seconds of a clean build: (everything compiled, Verilator's run-time objects taken
    from the cache as every build after the first on a machine does), with the profile-guided
    optimisation :func:`vta.sim.tsim.library.build` applies when it is enabled."""
    import os

    from vta.sim.tsim import pgo

    train = env if pgo.enabled() else None

    cold, warm = [], []
    saved = os.environ.get("VTA_CACHE_DIR")
    try:
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="vta-tsim-bench-") as tmp:
                os.environ["VTA_CACHE_DIR"] = tmp  # an empty cache, run-time objects included
                for times, sub in ((cold, "first"), (warm, "second")):
                    t0 = time.perf_counter()
                    library.build_sources(library.sources(), hwgen.sv_package(env), cache=Path(tmp) / sub,
                                          expand=library.expand_limit(env), train=train)
                    times.append(time.perf_counter() - t0)
    finally:
        if saved is None:
            os.environ.pop("VTA_CACHE_DIR", None)
        else:
            os.environ["VTA_CACHE_DIR"] = saved
    return statistics.median(cold), statistics.median(warm)


def _child_run(what: str, lib: Path) -> None:
    """Run C11 or the GEMM-heavy program once on ``lib`` and print its cycles (the process that
    :func:`instructions_per_cycle` runs under callgrind)."""
    env = make_env()
    if what == "c11":
        from vta.dse import workloads

        with env, TSim(env, global_dram(), library=lib) as dev:
            stats = workloads.run(workloads.get("resnet18.C11"), env, dev)
            print(f"cycles {int(stats['cycle_count'])}")
        return
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev:
        prog = gemm_program.build(env, dram, m=64, k=16, reps=64, seed=1)
        try:
            start = dev.cycles
            dev.run(prog.insn_addr, prog.insn_count)
            print(f"cycles {dev.cycles - start}")
            if (prog.output(dram) != prog.expected).any():
                raise SystemExit("tsim computed a wrong result on the benchmark program")
        finally:
            prog.free(dram)


def instructions_per_cycle(what: str, lib: Path) -> tuple[float, int] | None:
    """Host instructions per simulated cycle of one run of ``what`` ("c11" or "gemm") on ``lib``,
    counted by callgrind in the model's evaluation only; None without valgrind.

    Raises
    ------
    RuntimeError
        If the child run fails or callgrind reports no instructions in the evaluation function
        (a Verilator that names it otherwise).
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory(prefix="vta-tsim-cg-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
               f"--toggle-collect={_eval_function(lib)}", sys.executable, str(Path(__file__).resolve()),
               "--child-run", what, "--library", str(lib)]
        proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(_REPO)))
        cycles = re.search(r"^cycles (\d+)$", proc.stdout, re.M)
        collected = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode != 0 or cycles is None or collected is None:
            raise RuntimeError(f"callgrind run of {what} failed (exit {proc.returncode}):\n"
                               f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        instructions, n = int(collected.group(1)), int(cycles.group(1))
        if instructions == 0:
            raise RuntimeError(f"callgrind counted no instructions in {_eval_function(lib)}")
        return instructions / n, n


def _m(rate: float) -> str:
    return f"{rate / 1e6:.2f} M"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--build-repeats", type=int, default=1)
    parser.add_argument("--skip-build", action="store_true", help="do not time a clean build")
    parser.add_argument("--quick", action="store_true", help="small programs, one repeat, no clean build")
    parser.add_argument("--library", type=Path, help="measure this built tsim library (for instance one "
                        "built from an older tree, to re-measure the 'before' figures) instead of this tree's")
    parser.add_argument("--no-callgrind", action="store_true", help="do not count instructions per cycle")
    parser.add_argument("--child-run", choices=("c11", "gemm"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_run:
        _child_run(args.child_run, args.library)
        return
    if args.quick:
        args.repeats, args.skip_build, args.no_callgrind = 1, True, True

    env = make_env()
    b, p = BEFORE, BEFORE_PASS3
    # The quick run uses the library the test suite builds (with waveform support, which costs
    # no speed while no waveform is written), so a smoke run never triggers a second build.
    lib = args.library or library.build(env, trace="vcd" if args.quick else None)
    print(f"before = main at 08ea605, measured {b['date']} (stored figures; 'pass 3' = main at {p['tree']}, "
          f"stored, see BEFORE_PASS3); after = this tree, measured now")
    with env, TSim(env, global_dram(), library=lib) as dev:  # the runtime needs the global arena
        wall, cpu, cycles = resnet_rate(dev, env, args.repeats)
        print(f"ResNet-18 C11 on tsim: {cycles} cycles (before {b['resnet_c11_cycles']}); native run loop "
              f"median {_m(wall)} simulated cycles/s of wall time (before {_m(b['resnet_wall'])}), "
              f"{_m(cpu)} per CPU second (before {_m(b['resnet_cpu'])}, pass 3 {_m(p['resnet_cpu'])}) "
              f"({args.repeats} runs)")
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev:
        rate, cpu_rate, cycles = cycles_per_second(dev, dram, env, args.repeats, args.quick)
        print(f"GEMM-heavy program: {cycles} cycles per run, median {_m(rate)} simulated cycles/s "
              f"of wall time (before {_m(b['gemm_wall'])}), {_m(cpu_rate)} per CPU second (pass 3 "
              f"{_m(p['gemm_cpu'])}) ({args.repeats} runs)")
        n = 48 if args.quick else 384
        cpi = fetch_cycles_per_insn(dev, dram, env, n)
        print(f"fetch, instruction-bound stream: {cpi:.2f} cycles per instruction over {n} extra no-ops "
              f"(before {b['fetch_cpi']:.2f}; bus bound 2.00)")
        n = 128 if args.quick else 1024
        cpe = store_cycles_per_elem(dev, dram, env, n)
        bound = max(env.OUT_ELEM_BYTES // 8, 1)
        print(f"store, long STORE: {cpe:.2f} cycles per element over {n} extra elements "
              f"(before {b['store_cpe']:.2f}; bus bound {bound:.2f})")
        per_uop, uops = gemm_cycles_per_uop(dev, dram, env, args.repeats, args.quick)
        print(f"long GEMM: median {per_uop:.4f} cycles per uop over {uops} extra uops "
              f"({'within' if abs(per_uop - 1) <= 0.05 else 'OUTSIDE'} 5% of one uop per cycle)")
    p5, p6, p7, p8, p9 = BEFORE_PASS5, BEFORE_PASS6, BEFORE_PASS7, BEFORE_PASS8, BEFORE_PASS9
    p10, p11 = BEFORE_PASS10, BEFORE_PASS11
    if args.no_callgrind:
        print("host instructions per simulated cycle: not counted (--quick or --no-callgrind)")
    elif shutil.which("valgrind") is None:
        print("host instructions per simulated cycle: not counted (valgrind is not installed)")
    else:
        for what, label, key in (("c11", "ResNet-18 C11", "resnet_ipc"), ("gemm", "GEMM-heavy program", "gemm_ipc")):
            ipc, n = instructions_per_cycle(what, lib)
            print(f"host instructions per simulated cycle, {label}: {ipc:,.0f} over {n} cycles (callgrind, "
                  f"model evaluation only; before pass 5 {p5[key]:,} at {p5['tree']}, before pass 6 "
                  f"{p6[key]:,} at {p6['tree']}, before pass 7 {p7[key]:,} at {p7['tree']}, before pass 8 "
                  f"{p8[key]:,} at {p8['tree']}, before pass 9 {p9[key]:,} at {p9['tree']}, before pass 10 "
                  f"{p10[key]:,} at {p10['tree']}, before pass 11 {p11[key]:,} at {p11['tree']}; goal 2,000)")
    if not args.skip_build:
        cold, warm = build_seconds(env, args.build_repeats)
        print(
            f"clean RTL build: median {warm:.1f} s with Verilator's run-time objects cached, {cold:.1f} s "
            f"with nothing cached ({args.build_repeats} build(s) each, temporary caches; before {b['build_s']:.0f} s)"
        )


if __name__ == "__main__":
    main()
