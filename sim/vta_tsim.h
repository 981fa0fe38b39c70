/*
 * vta_tsim.h - C API of the tsim shim: a Verilated VTA core (top module vta_tsim_top) bound to
 * a DRAM arena, driven one clock at a time from the calling thread (no threads of its own).
 *
 * Memory requests of the core are served by direct access to the arena: physical address A is
 * byte A of the arena. Read bursts are timed by a simple DRAM model (vta_tsim_set_dram; by default
 * the ideal memory, which answers every burst the cycle after its request). Every burst must lie inside [4096, arena_size) (page 0 is never valid);
 * a burst outside stops the next run with VTA_TSIM_DRAM_ERROR and its address is kept.
 *
 * Every function taking a handle checks it first and returns VTA_TSIM_BAD_HANDLE (or NULL / 0)
 * for NULL, freed or foreign pointers. vta_tsim_last_error() explains the last failure.
 */
#ifndef VTA_TSIM_H_
#define VTA_TSIM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by the functions below. */
enum {
  VTA_TSIM_OK = 0,          /* the core finished (run) or the call succeeded */
  VTA_TSIM_HW_ERROR = 1,    /* the core halted with CTRL bit 2 (error); see STATUS */
  VTA_TSIM_DRAM_ERROR = 2,  /* a memory burst fell outside the arena */
  VTA_TSIM_TIMEOUT = 3,     /* max_cycles elapsed before the core finished */
  VTA_TSIM_STOPPED = 4,     /* the progress callback asked to stop */
  VTA_TSIM_PROTOCOL_ERROR = 5, /* the core broke a memory channel rule (vta_tsim_last_error) */
  VTA_TSIM_ASSERTION = 6,   /* an RTL assertion failed; vta_tsim_last_error says where and when */
  VTA_TSIM_UNDRAINED = 7,   /* FINISH retired but queued instructions can never get their tokens */
  VTA_TSIM_BAD_HANDLE = -1, /* the handle is NULL, closed or not a tsim model */
  VTA_TSIM_BAD_ARG = -2,    /* an argument is out of range (see vta_tsim_last_error) */
};

typedef struct vta_tsim vta_tsim_t;

/* Called every `interval` cycles of a run with the cycles elapsed in the run and the sum of the
 * retired-instruction registers. Return 0 to continue, non-zero to stop the run. */
typedef int (*vta_tsim_progress_fn)(void* user, uint64_t cycles, uint64_t retired);

/* Create a model bound to the arena [base, base + size). `trace_path` (NULL for none) names a
 * waveform file (VCD or FST, as the library was built); tracing needs a library built with
 * tracing. Returns NULL on failure and writes the reason into err (errlen bytes). The model is
 * reset on creation. */
vta_tsim_t* vta_tsim_create(void* base, uint64_t size, const char* trace_path, char* err,
                            uint64_t errlen);
/* Flush and close the waveform, free the model. NULL is accepted and ignored. */
void vta_tsim_destroy(vta_tsim_t* sim);
/* Hold reset for 10 cycles; forgets queued memory bursts and the last DRAM error. */
int vta_tsim_reset(vta_tsim_t* sim);
/* Register accesses through the host port (byte address 0x00..0xFC, 4-aligned). They clock the
 * core until the access completed. */
int vta_tsim_reg_write(vta_tsim_t* sim, uint32_t addr, uint32_t value);
int vta_tsim_reg_read(vta_tsim_t* sim, uint32_t addr, uint32_t* value);
/* Install (fn != NULL) or remove the progress callback. regs/nregs: registers summed into
 * `retired` (at most 8). */
int vta_tsim_set_progress(vta_tsim_t* sim, vta_tsim_progress_fn fn, void* user,
                          uint64_t interval, const uint32_t* regs, int nregs);
/* Write VAL0 = insn_count and PTR0 = insn_phys_addr, launch, and clock until the core finishes,
 * halts with an error (CTRL bit 2), a burst leaves the arena or breaks the channel rules, an RTL
 * assertion fails (checked after every batch of 64 cycles and at the finish), or max_cycles
 * elapse. Once FINISH has retired, the core is clocked on until every instruction of the
 * stream has been dispatched and executed (all units idle), so nothing of this run is left
 * queued for the next one; VTA_TSIM_UNDRAINED if queued instructions can never run. Returns a
 * status code. */
int vta_tsim_run(vta_tsim_t* sim, uint32_t insn_phys_addr, uint32_t insn_count,
                 uint64_t max_cycles);
/* Clock the core for n cycles (tests and the progress of idle designs). Returns
 * VTA_TSIM_DRAM_ERROR or VTA_TSIM_ASSERTION (failures recorded since the last reset or run). */
int vta_tsim_step(vta_tsim_t* sim, uint64_t n);
/* Cycles clocked out of reset since creation. */
uint64_t vta_tsim_cycles(vta_tsim_t* sim);
/* Cycles of the last run, as counted by the shim from launch to the observed finish. */
uint64_t vta_tsim_run_cycles(vta_tsim_t* sim);
/* The last DRAM error: returns 1 and fills the fields if there was one since the last run. */
int vta_tsim_dram_error(vta_tsim_t* sim, uint64_t* addr, uint32_t* nbytes, int* is_write);
/* Whether the library was built with waveform support (0 none, 1 VCD, 2 FST). */
int vta_tsim_trace_kind(void);
/* Explanation of the last failure on this thread (empty string if none). */
const char* vta_tsim_last_error(void);
/* RTL assertion failures (Verilator $stop / $error) since the last reset or run start: returns
 * their count and, when there was one, the cycle (since creation) of the first into *cycle. */
uint32_t vta_tsim_assertions(vta_tsim_t* sim, uint64_t* cycle);

/* The simulated DRAM of the read channel (the DRAM_* keys of the configuration): a read burst
 * is issued once fewer than `max_outstanding` bursts are in flight (0: no limit), its first beat
 * comes `latency` cycles after it was issued (1: the ideal memory), and beats, one per cycle at
 * most and in request order, draw on a bandwidth of `bytes_per_cycle` (8 or more: one beat per
 * cycle). Writes are unaffected (posted). Ranges: latency 1..4096, bytes 1..64, outstanding
 * 0..1024; not while read bursts are queued. */
int vta_tsim_set_dram(vta_tsim_t* sim, uint32_t latency, uint32_t bytes_per_cycle, uint32_t max_outstanding);

/* The profiler's probe. While enabled, every cycle a run counts (the ECNT0 clock) is sampled
 * and changes are recorded as 16-byte records {uint64 cycle; uint32 what; uint32 value}, with
 * what = kind << 8 | detail:
 *   UNIT    detail = unit | state << 4 (units 0 fetch .. 3 store, vta_pkg STATE_*),
 *           value = the unit's instruction index; recorded when the pair changes
 *   FILL    detail = queue (0 load, 1 compute, 2 store), value = entries; on change
 *   TOKENS  detail = channel (vta_pkg CHAN_*), value = tokens outstanding; on change
 *   PUSH    detail = channel, value = the pushing unit's instruction index
 *   POP     detail = channel, value = the popping unit's instruction index
 *   READ    detail = read client (0 fetch, 1 uop, 2 inp, 3 wgt, 4 acc), value = beats in the
 *           window starting at cycle
 *   WRITE   value = write beats in the window starting at cycle
 *   END     the run's last counted cycle + 1 (every traced run ends with one)
 * Enabling or disabling clears the records; `window` is the width of the beat windows. */
enum {
  VTA_TSIM_PROBE_UNIT = 1,
  VTA_TSIM_PROBE_FILL = 2,
  VTA_TSIM_PROBE_TOKENS = 3,
  VTA_TSIM_PROBE_PUSH = 4,
  VTA_TSIM_PROBE_POP = 5,
  VTA_TSIM_PROBE_READ = 6,
  VTA_TSIM_PROBE_WRITE = 7,
  VTA_TSIM_PROBE_END = 8,
};
int vta_tsim_probe(vta_tsim_t* sim, int enable, uint32_t window);
/* Move up to max_records of the oldest records into out; returns how many. */
uint64_t vta_tsim_probe_take(vta_tsim_t* sim, void* out, uint64_t max_records);
/* Records waiting to be taken. */
uint64_t vta_tsim_probe_count(vta_tsim_t* sim);

/* The build defines VL_PRINTF as this function (and force-includes this header), so the shim sees
 * what the Verilated model prints (it is still written to stdout); the first "%Error" line of a
 * run is kept for the message of VTA_TSIM_ASSERTION. Not part of the C API. */
int vta_tsim_vl_printf(const char* format, ...);

#ifdef __cplusplus
}
#endif

#endif /* VTA_TSIM_H_ */
