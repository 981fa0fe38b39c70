// vta_tsim.cc - the tsim shim: runs the Verilated vta_tsim_top, answers its DPI calls (host
// register port, memory, profiler probe) and exposes the C API of vta_tsim.h.
//
// Single-threaded by design: the caller's thread clocks the model. The DPI functions find their
// model through `g_current`, which every entry point sets for the time it clocks the model; each
// DPI adapter checks it before use.
#include "vta_tsim.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "verilated.h"
#include "Vvta_tsim_top.h"
#include "Vvta_tsim_top__Dpi.h"
#include "Vvta_tsim_top___024root.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
typedef VerilatedFstC TraceFile;
#define VTA_TSIM_TRACE_KIND 2
#elif VM_TRACE
#include "verilated_vcd_c.h"
typedef VerilatedVcdC TraceFile;
#define VTA_TSIM_TRACE_KIND 1
#else
#define VTA_TSIM_TRACE_KIND 0
#endif

#define VTA_TSIM_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint32_t kMagic = 0x7a5e1d0cu;
constexpr uint64_t kPageBytes = 4096;   // physical page 0 is never valid
constexpr uint32_t kBeatBytes = 8;      // 64-bit memory bus
constexpr uint64_t kMaxBurstBytes = 128;  // 16 beats, never across a 128-byte boundary
constexpr uint32_t kRegCtrl = 0x00, kRegVal0 = 0x08, kRegPtr0 = 0x0C;  // vta.sim.tsim.hwgen map
constexpr uint32_t kRegUnitState = 0x9C;  // 4 bits per unit: fetch, load, compute, store
constexpr uint32_t kStateBusy = 2;        // vta_pkg STATE_BUSY
constexpr uint32_t kCtrlFinish = 1u << 1, kCtrlError = 1u << 2;      // CTRL bits
constexpr uint64_t kPollInterval = 64;  // cycles between polls of CTRL during a run
constexpr uint64_t kRegTimeout = 1000;  // cycles a register access may take
constexpr int kMaxProgressRegs = 8;

thread_local std::string g_error;

void set_error(const std::string& msg) { g_error = msg; }

struct ReadBurst {
  uint64_t addr;   // byte address of the next beat
  uint32_t beats;  // beats left
  uint8_t id;
  bool bad;        // outside the arena: served as zeros
  bool issued = false;  // sent to the DRAM (counts against the outstanding limit)
  uint64_t ready = 0;   // cycle from which its first beat may be returned (once issued)
};

// The simulated DRAM behind the read channel (vta.env DRAM_* keys). Bursts are served in request
// order, one beat per cycle at most. A burst is issued to the DRAM once fewer than
// max_outstanding bursts are in flight (0: no limit); its first beat can be returned `latency`
// cycles after the cycle it was issued; beats draw 8 bytes each from a credit that grows by
// bytes_per_cycle every cycle and banks at most two beats. The defaults are the ideal memory:
// every burst answered the cycle after its request, one beat per cycle.
struct DramTiming {
  uint32_t latency = 1;
  uint32_t bytes_per_cycle = 8;
  uint32_t max_outstanding = 0;
};
constexpr uint32_t kCreditCap = 2 * 8;  // bytes of read credit banked at most

// The queue of read bursts: a ring over a power-of-two vector that doubles when full. A beat is
// served in most cycles of a load, and std::deque's indexing and size cost several times the
// work of the DRAM model itself there.
class BurstQueue {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  ReadBurst& front() { return buf_[head_ & mask_]; }
  ReadBurst& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  void pop_front() { ++head_; }
  void clear() { head_ = tail_ = 0; }
  void push_back(const ReadBurst& r) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & mask_] = r;
  }

 private:
  void grow() {
    std::vector<ReadBurst> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    for (size_t i = 0; i < size(); ++i) bigger[i] = (*this)[i];
    tail_ = size();
    head_ = 0;
    buf_.swap(bigger);
    mask_ = buf_.size() - 1;
  }
  std::vector<ReadBurst> buf_;
  size_t mask_ = 0;
  size_t head_ = 0;  // index of the front, modulo the capacity
  size_t tail_ = 0;  // one past the back
};

// One record of the profiler's probe (layout shared with vta/sim/tsim/probe.py).
struct ProbeRecord {
  uint64_t cycle;  // cycles the core counted in the run before this one (the ECNT0 clock)
  uint32_t what;   // kind << 8 | detail (see vta_tsim.h)
  uint32_t value;
};

// State of the probe while a run is traced: the last reported value of each signal, so that
// only changes are recorded, and the memory beats of the current window.
struct Probe {
  bool on = false;
  uint32_t window = 256;
  uint64_t t = 0;
  uint64_t unit[4] = {};
  uint32_t fill[3] = {};
  uint32_t tokens = 0;
  uint32_t rd[5] = {};
  uint32_t wr = 0;
  uint64_t window_start = 0;
  bool fresh = true;
  std::vector<ProbeRecord> records;

  void add(uint64_t cycle, uint32_t kind, uint32_t detail, uint32_t value) {
    records.push_back(ProbeRecord{cycle, kind << 8 | detail, value});
  }
  void start_run() {
    t = 0;
    window_start = 0;
    fresh = true;
    wr = 0;
    for (uint32_t& r : rd) r = 0;
  }
  void flush_window(uint64_t now) {
    for (uint32_t c = 0; c < 5; ++c)
      if (rd[c]) add(window_start, VTA_TSIM_PROBE_READ, c, rd[c]), rd[c] = 0;
    if (wr) add(window_start, VTA_TSIM_PROBE_WRITE, 0, wr), wr = 0;
    window_start = now;
  }
};

struct Model {
  uint32_t magic = kMagic;
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Vvta_tsim_top> top;
#if VTA_TSIM_TRACE_KIND
  std::unique_ptr<TraceFile> trace;
  uint64_t trace_time = 0;
#endif
  uint8_t* arena = nullptr;
  uint64_t arena_size = 0;
  uint64_t cycles = 0;      // edges out of reset
  uint64_t run_cycles = 0;
  // host port: one access at a time
  bool req_pending = false, req_issued = false, req_we = false, resp_ready = false;
  uint8_t req_addr = 0;
  uint32_t req_wdata = 0, resp_value = 0;
  // memory
  BurstQueue reads;
  DramTiming dram;
  size_t in_flight = 0;     // bursts issued to the DRAM and not yet returned in full (a prefix of reads)
  uint64_t credit = kCreditCap;
  uint64_t credit_cycle = 0;  // the cycle `credit` was last brought up to date
  uint64_t wr_addr = 0;
  uint32_t wr_beats = 0;
  bool wr_bad = false;
  bool dram_error = false;
  uint64_t dram_error_addr = 0;
  uint32_t dram_error_bytes = 0;
  bool dram_error_write = false;
  std::string protocol_error;  // first violation of the memory channel rules, if any
  // RTL assertions (the context's error state is cleared by every reset and run start)
  uint32_t assert_count = 0;
  uint64_t assert_cycle = 0;      // cycle (since creation) of the first failure
  std::string assert_location;    // file:line (hierarchy) of the first failure
  std::string assert_text;        // first "%Error" line the model printed
  // run control
  vta_tsim_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  uint64_t progress_interval = 0;
  uint32_t progress_regs[kMaxProgressRegs] = {};
  int progress_nregs = 0;
  Probe probe;

  bool burst_ok(uint64_t addr, uint64_t nbytes) const {
    return addr >= kPageBytes && addr <= arena_size && nbytes <= arena_size - addr;
  }
  void record_protocol_error(const char* what, uint64_t addr, uint32_t nbytes) {
    if (!protocol_error.empty()) return;  // keep the first one
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s (burst at 0x%llx, %u bytes)", what,
                  static_cast<unsigned long long>(addr), nbytes);
    protocol_error = buf;
  }
  // The burst rules of the vta_top memory channels.
  void check_burst(uint64_t addr, uint32_t nbytes, bool write) {
    if (addr % kBeatBytes != 0)
      record_protocol_error(write ? "write burst not 8-byte aligned" : "read burst not 8-byte aligned",
                            addr, nbytes);
    else if (nbytes > kMaxBurstBytes || addr / kMaxBurstBytes != (addr + nbytes - 1) / kMaxBurstBytes)
      record_protocol_error(write ? "write burst crosses a 128-byte boundary"
                                  : "read burst crosses a 128-byte boundary", addr, nbytes);
  }
  void record_dram_error(uint64_t addr, uint32_t nbytes, bool write) {
    if (dram_error) return;  // keep the first one
    dram_error = true;
    dram_error_addr = addr;
    dram_error_bytes = nbytes;
    dram_error_write = write;
  }
};

thread_local Model* g_current = nullptr;

// Makes `m` the model the DPI adapters serve for the lifetime of the guard, and its context
// Verilator's current one (Verilator keeps a per-thread context pointer, which must never be
// left pointing at the context of a model destroyed earlier).
struct Current {
  Model* saved;
  explicit Current(Model* m) : saved(g_current) {
    g_current = m;
    Verilated::threadContextp(m->ctx.get());
  }
  ~Current() { g_current = saved; }
};

Model* check(vta_tsim_t* h) {
  Model* m = reinterpret_cast<Model*>(h);
  if (m == nullptr || m->magic != kMagic) {
    set_error("invalid tsim handle (NULL, closed or not a tsim model)");
    return nullptr;
  }
  return m;
}

// Whether the Verilated root keeps the previous clock value of its edge detection in the member
// this Verilator names __Vtrigprevexpr___TOP__clk_i__0 (detected, so that another Verilator
// version falls back to evaluating both edges).
template <typename R, typename = void>
struct HasClkPrev : std::false_type {};
template <typename R>
struct HasClkPrev<R, decltype(void(std::declval<R&>().__Vtrigprevexpr___TOP__clk_i__0))> : std::true_type {};

// Lower the clock without evaluating the model. No logic of the design reacts to the falling
// edge of clk_i (every process is `posedge clk_i` or `negedge rst_ni`; no combinational logic
// reads the clock), so the evaluation of that edge only records the low clock for the edge
// detection of the next one: record it directly. Half the evaluations, identical cycles.
template <typename R>
inline bool fall_without_eval(R* root, std::true_type) {
  root->__Vtrigprevexpr___TOP__clk_i__0 = 0;
  return true;
}
template <typename R>
inline bool fall_without_eval(R*, std::false_type) {
  return false;
}

}  // namespace

// The root evaluation function of the Verilated model, which Vvta_tsim_top::eval() calls after
// its once-per-model initialisation and before its end-of-evaluation bookkeeping (deleting
// dynamic objects, which this design has none of, and delivering messages queued by worker
// threads, which a model without --threads has none of: its $display and $error print at once).
// That bookkeeping cost about 4% of the instructions of a cycle, so clock edges after the first
// evaluation call it directly. Declared weak: a Verilator that names it otherwise leaves it
// null, and eval() is used.
void Vvta_tsim_top___024root___eval(Vvta_tsim_top___024root* vlSelf) __attribute__((weak));

namespace {

// Evaluate the model (its first evaluation, in vta_tsim_create, goes through eval()).
inline void eval(Model* m) {
  if (&Vvta_tsim_top___024root___eval != nullptr) {
    Vvta_tsim_top___024root___eval(m->top->rootp);
  } else {
    m->top->eval();
  }
}

}  // namespace

// The two steps of the root evaluation that do the work of a clock edge: computing the triggers
// of the edge (the clock's and the reset's edge expressions, against their previous values) and
// running the processes they trigger (the `nba` region). Declared weak like the root evaluation.
void Vvta_tsim_top___024root___eval_triggers_vec__act(Vvta_tsim_top___024root* vlSelf) __attribute__((weak));
void Vvta_tsim_top___024root___eval_nba(Vvta_tsim_top___024root* vlSelf) __attribute__((weak));
// Present only in a model with processes in the `act` region (logic the scheduler re-evaluates
// until it settles) or the `ico` region (logic reading inputs outside a clocked process); this
// design has neither, and with either one the root evaluation is used.
void Vvta_tsim_top___024root___eval_act(Vvta_tsim_top___024root* vlSelf) __attribute__((weak));
void Vvta_tsim_top___024root___eval_ico(Vvta_tsim_top___024root* vlSelf) __attribute__((weak));

namespace {

// Whether the root holds the trigger vectors this Verilator names __VactTriggered and
// __VnbaTriggered (detected, as HasClkPrev).
template <typename R, typename = void>
struct HasTriggers : std::false_type {};
template <typename R>
struct HasTriggers<R, decltype(void(std::declval<R&>().__VactTriggered[0]),
                               void(std::declval<R&>().__VnbaTriggered[0]))> : std::true_type {};

// Evaluate a rising clock edge as the root evaluation does, without its scheduling loop. Every
// process of the design is `posedge clk_i` or `negedge rst_ni` (there is no `ico` region: no
// logic reads an input outside a clocked process), so the root evaluation computes the triggers
// of the edge, runs the triggered processes once, and then computes the triggers a second time
// (finding none: the processes write no clock or reset) before it returns. This does the first
// two steps only: the same processes, in the same order, on the same values.
template <typename R>
inline bool rise_without_loop(R* root, std::true_type) {
  if (&Vvta_tsim_top___024root___eval_triggers_vec__act == nullptr ||
      &Vvta_tsim_top___024root___eval_nba == nullptr || &Vvta_tsim_top___024root___eval_act != nullptr ||
      &Vvta_tsim_top___024root___eval_ico != nullptr) {
    return false;
  }
  Vvta_tsim_top___024root___eval_triggers_vec__act(root);
  constexpr size_t kWords = sizeof(root->__VactTriggered) / sizeof(root->__VactTriggered[0]);
  bool any = false;
  for (size_t i = 0; i < kWords; ++i) {
    root->__VnbaTriggered[i] = root->__VnbaTriggered[i] | root->__VactTriggered[i];
    any = any || root->__VnbaTriggered[i] != 0;
  }
  if (any) {
    Vvta_tsim_top___024root___eval_nba(root);
    for (size_t i = 0; i < kWords; ++i) root->__VnbaTriggered[i] = 0;
  }
  return true;
}
template <typename R>
inline bool rise_without_loop(R*, std::false_type) {
  return false;
}

// Evaluate the rising clock edge (clk_i already raised). Kept out of line so that a profiler can
// count the model's work per cycle in one function (benchmarks/tsim_throughput.py does).
__attribute__((noinline)) void vta_tsim_rising_edge(Model* m) {
  if (!rise_without_loop(m->top->rootp, HasTriggers<Vvta_tsim_top___024root>{})) eval(m);
}

inline void tick(Model* m) {
#if VTA_TSIM_TRACE_KIND
  const bool tracing = m->trace != nullptr;
#else
  const bool tracing = false;
#endif
  // The rising edge below is a simulated cycle when the core is out of reset (the count the
  // DPI models see during its evaluation, and the one the C API reports).
  if (m->top->rst_ni) ++m->cycles;
  // vta_dpi_host calls the shim only while there is a request to hand over or a read response to
  // collect (a write is done once handed over).
  m->top->host_poll_i = (m->req_pending || (m->req_issued && !m->req_we)) ? 1 : 0;
  m->top->clk_i = 0;
  if (tracing || !fall_without_eval(m->top->rootp, HasClkPrev<Vvta_tsim_top___024root>{})) {
    eval(m);
#if VTA_TSIM_TRACE_KIND
    if (m->trace) m->trace->dump(m->trace_time++);
#endif
  }
  m->top->clk_i = 1;
  vta_tsim_rising_edge(m);
#if VTA_TSIM_TRACE_KIND
  if (m->trace) m->trace->dump(m->trace_time++);
#endif
}

// Forget recorded assertion failures and clear the Verilated context's error state (a failing
// $error sets gotError and gotFinish, and counts against the context's error limit).
void clear_assertions(Model* m) {
  m->assert_count = 0;
  m->assert_cycle = 0;
  m->assert_location.clear();
  m->assert_text.clear();
  m->ctx->gotError(false);
  m->ctx->gotFinish(false);
  m->ctx->errorCount(0);
}

// Whether an RTL assertion failed; if so, explain it through set_error.
bool assertion_failed(Model* m, uint64_t start) {
  if (m->assert_count == 0 && !m->ctx->gotError()) return false;
  std::string msg = "RTL assertion failed";
  if (!m->assert_location.empty()) msg += " at " + m->assert_location;
  char buf[160];
  std::snprintf(buf, sizeof buf, " in cycle %llu of the run (cycle %llu since creation); %u failure(s) in all",
                static_cast<unsigned long long>(m->assert_cycle >= start ? m->assert_cycle - start : 0),
                static_cast<unsigned long long>(m->assert_cycle), m->assert_count ? m->assert_count : 1u);
  msg += buf;
  if (!m->assert_text.empty()) msg += ": " + m->assert_text;
  set_error(msg);
  return true;
}

void do_reset(Model* m) {
  m->top->rst_ni = 0;
  for (int i = 0; i < 10; ++i) tick(m);
  m->top->rst_ni = 1;
  m->reads.clear();
  m->in_flight = 0;
  m->credit = kCreditCap;
  m->credit_cycle = m->cycles;
  m->wr_beats = 0;
  m->wr_bad = false;
  m->req_pending = m->req_issued = m->resp_ready = false;
  m->dram_error = false;
  m->protocol_error.clear();
  clear_assertions(m);
}

// Start a register access; it is handed to the core by the next host DPI call.
void post_access(Model* m, bool we, uint32_t addr, uint32_t value) {
  m->req_pending = true;
  m->req_issued = false;
  m->resp_ready = false;
  m->req_we = we;
  m->req_addr = static_cast<uint8_t>(addr);
  m->req_wdata = value;
}

bool check_reg_addr(uint32_t addr) {
  if (addr > 0xFC || (addr & 3u) != 0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "register address 0x%x is not a 4-aligned byte address in 0x00..0xFC",
                  addr);
    set_error(buf);
    return false;
  }
  return true;
}

int reg_write(Model* m, uint32_t addr, uint32_t value) {
  post_access(m, true, addr, value);
  for (uint64_t i = 0; i < kRegTimeout && !m->req_issued; ++i) tick(m);
  if (!m->req_issued) {
    set_error("register write was not accepted by the host DPI model");
    return VTA_TSIM_TIMEOUT;
  }
  tick(m);  // the core samples the registered request on this edge
  return VTA_TSIM_OK;
}

int reg_read(Model* m, uint32_t addr, uint32_t* value) {
  post_access(m, false, addr, 0);
  for (uint64_t i = 0; i < kRegTimeout && !m->resp_ready; ++i) tick(m);
  if (!m->resp_ready) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "register read of 0x%02x got no response within %llu cycles",
                  addr, static_cast<unsigned long long>(kRegTimeout));
    set_error(buf);
    return VTA_TSIM_TIMEOUT;
  }
  m->resp_ready = false;
  *value = m->resp_value;
  return VTA_TSIM_OK;
}

// The DRAM's read side in one edge (vta_dpi_mem_tick and vta_dpi_mem_beat): issue waiting bursts
// while the outstanding limit allows, then return at most one beat, of the oldest burst, once its
// latency has elapsed and the bandwidth credit allows; rd_busy says whether bursts remain queued.
// The outputs are 0 on entry.
inline void serve_read(Model* m, svBit* rd_valid, unsigned long long* rd_data, unsigned char* rd_id_out,
                       svBit* rd_last, svBit* rd_busy) {
  const uint64_t now = m->cycles;
  const DramTiming& d = m->dram;
  // Bursts are issued in order, so the issued ones are the first `in_flight` of the queue.
  while (m->in_flight < m->reads.size() && (d.max_outstanding == 0 || m->in_flight < d.max_outstanding)) {
    ReadBurst& r = m->reads[m->in_flight++];
    r.issued = true;
    r.ready = now + d.latency - 1;
  }
  if (d.bytes_per_cycle < kBeatBytes) {
    const uint64_t grown = m->credit + (now - m->credit_cycle) * d.bytes_per_cycle;
    m->credit = grown < kCreditCap ? grown : kCreditCap;
  }
  m->credit_cycle = now;
  if (!m->reads.empty() && m->reads.front().issued && m->reads.front().ready <= now &&
      (d.bytes_per_cycle >= kBeatBytes || m->credit >= kBeatBytes)) {
    ReadBurst& r = m->reads.front();
    if (d.bytes_per_cycle < kBeatBytes) m->credit -= kBeatBytes;
    unsigned long long v = 0;
    if (!r.bad) std::memcpy(&v, m->arena + r.addr, kBeatBytes);
    *rd_valid = 1;
    *rd_data = v;
    *rd_id_out = r.id;
    r.addr += kBeatBytes;
    if (--r.beats == 0) {
      *rd_last = 1;
      m->reads.pop_front();
      --m->in_flight;
    }
  }
  *rd_busy = m->reads.empty() ? 0 : 1;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// DPI adapters (declared by the Verilator-generated Vvta_tsim_top__Dpi.h).

void vta_dpi_host_tick(svBit rvalid, unsigned int rdata, svBit* req, svBit* we, unsigned char* addr,
                       unsigned int* wdata) {
  *req = 0;
  *we = 0;
  *addr = 0;
  *wdata = 0;
  Model* m = g_current;
  if (m == nullptr) return;
  if (rvalid && m->req_issued && !m->req_we) {
    m->resp_value = rdata;
    m->resp_ready = true;
    m->req_issued = false;
  }
  if (m->req_pending) {
    *req = 1;
    *we = m->req_we ? 1 : 0;
    *addr = m->req_addr;
    *wdata = m->req_wdata;
    m->req_pending = false;
    m->req_issued = true;
  }
}

void vta_dpi_mem_tick(svBit rd_req, unsigned int rd_addr, unsigned char rd_len, unsigned char rd_id,
                      svBit wr_req, unsigned int wr_addr, unsigned char wr_len, svBit wr_beat,
                      unsigned long long wr_data, unsigned char wr_strb, svBit wr_last, svBit* rd_valid,
                      unsigned long long* rd_data, unsigned char* rd_id_out, svBit* rd_last,
                      svBit* rd_busy) {
  *rd_valid = 0;
  *rd_data = 0;
  *rd_id_out = 0;
  *rd_last = 0;
  *rd_busy = 0;
  Model* m = g_current;
  if (m == nullptr) return;
  // Write beat of the current burst (its request was accepted on an earlier edge).
  if (wr_beat) {
    if (m->wr_beats == 0) {
      m->record_protocol_error("write beat outside a burst", m->wr_addr, kBeatBytes);
    } else {
      if ((m->wr_beats == 1) != (wr_last != 0))
        m->record_protocol_error(wr_last ? "write `last` before the final beat"
                                         : "final write beat without `last`", m->wr_addr, kBeatBytes);
      if (!m->wr_bad) {
        uint8_t* p = m->arena + m->wr_addr;
        if (wr_strb == 0xFF) {
          std::memcpy(p, &wr_data, kBeatBytes);
        } else {
          for (uint32_t b = 0; b < kBeatBytes; ++b)
            if (wr_strb & (1u << b)) p[b] = static_cast<uint8_t>(wr_data >> (8 * b));
        }
      }
      m->wr_addr += kBeatBytes;
      --m->wr_beats;
    }
  }
  if (wr_req) {
    uint32_t nbytes = (static_cast<uint32_t>(wr_len) + 1) * kBeatBytes;
    if (m->wr_beats != 0) m->record_protocol_error("write request during a burst", wr_addr, nbytes);
    m->check_burst(wr_addr, nbytes, true);
    m->wr_addr = wr_addr;
    m->wr_beats = static_cast<uint32_t>(wr_len) + 1;
    m->wr_bad = !m->burst_ok(wr_addr, nbytes);
    if (m->wr_bad) m->record_dram_error(wr_addr, nbytes, true);
  }
  if (rd_req) {
    uint32_t nbytes = (static_cast<uint32_t>(rd_len) + 1) * kBeatBytes;
    m->check_burst(rd_addr, nbytes, false);
    bool bad = !m->burst_ok(rd_addr, nbytes);
    if (bad) m->record_dram_error(rd_addr, nbytes, false);
    m->reads.push_back(ReadBurst{rd_addr, static_cast<uint32_t>(rd_len) + 1, rd_id, bad});
  }
  serve_read(m, rd_valid, rd_data, rd_id_out, rd_last, rd_busy);
}

void vta_dpi_mem_beat(svBit* rd_valid, unsigned long long* rd_data, unsigned char* rd_id_out, svBit* rd_last,
                      svBit* rd_busy) {
  *rd_valid = 0;
  *rd_data = 0;
  *rd_id_out = 0;
  *rd_last = 0;
  *rd_busy = 0;
  Model* m = g_current;
  if (m == nullptr) return;
  serve_read(m, rd_valid, rd_data, rd_id_out, rd_last, rd_busy);
}

// Token channels (vta_pkg CHAN_*): the unit that pushes and the unit that pops each one
// (units: 0 fetch, 1 load, 2 compute, 3 store).
constexpr int kProducer[4] = {1, 2, 2, 3};
constexpr int kConsumer[4] = {2, 1, 3, 2};

void vta_dpi_probe_tick(unsigned int flags, unsigned int index0, unsigned int index1,
                        unsigned int index2, unsigned int index3, unsigned long long fill,
                        unsigned int tokens) {
  Model* m = g_current;
  if (m == nullptr || !m->probe.on || !(flags & (1u << 26))) return;
  Probe& p = m->probe;
  const uint64_t t = p.t++;
  const uint32_t index[4] = {index0, index1, index2, index3};
  for (uint32_t u = 0; u < 4; ++u) {
    const uint32_t st = (flags >> (2 * u)) & 3u;
    const uint64_t key = static_cast<uint64_t>(st) << 32 | index[u];
    if (p.fresh || key != p.unit[u]) p.add(t, VTA_TSIM_PROBE_UNIT, u | st << 4, index[u]), p.unit[u] = key;
  }
  for (uint32_t q = 0; q < 3; ++q) {
    const uint32_t f = static_cast<uint32_t>(fill >> (16 * q)) & 0xFFFFu;
    if (p.fresh || f != p.fill[q]) p.add(t, VTA_TSIM_PROBE_FILL, q, f), p.fill[q] = f;
  }
  if (p.fresh || tokens != p.tokens) {
    for (uint32_t c = 0; c < 4; ++c) {
      const uint32_t n = (tokens >> (8 * c)) & 0xFFu;
      if (p.fresh || n != ((p.tokens >> (8 * c)) & 0xFFu)) p.add(t, VTA_TSIM_PROBE_TOKENS, c, n);
    }
    p.tokens = tokens;
  }
  p.fresh = false;
  const uint32_t push = (flags >> 12) & 0xFu, pop = (flags >> 16) & 0xFu;
  if (push | pop) {
    for (int c = 0; c < 4; ++c) {
      if (push & (1u << c)) p.add(t, VTA_TSIM_PROBE_PUSH, c, index[kProducer[c]]);
      if (pop & (1u << c)) p.add(t, VTA_TSIM_PROBE_POP, c, index[kConsumer[c]]);
    }
  }
  const uint32_t rd = (flags >> 20) & 0x1Fu;
  if (rd)
    for (int c = 0; c < 5; ++c) p.rd[c] += (rd >> c) & 1u;
  p.wr += (flags >> 25) & 1u;
  if (p.t - p.window_start >= p.window) p.flush_window(p.t);
}

// ------------------------------------------------------------------------------------------
// Verilator hooks: the build defines VL_USER_STOP (so this vl_stop replaces Verilator's) and
// VL_PRINTF=vta_tsim_vl_printf.

// Called for $stop, $fatal and failing assertions ($error) once the context's error limit is
// reached (the default limit 1 makes that every failure).
void vl_stop(const char* filename, int linenum, const char* hier) {
  VerilatedContext* ctx = Verilated::threadContextp();
  ctx->gotError(true);
  ctx->gotFinish(true);
  std::fprintf(stderr, "%%Error: %s:%d: Verilog $stop\n", filename ? filename : "?", linenum);
  std::fflush(stderr);
  Model* m = g_current;
  if (m == nullptr) return;
  if (m->assert_count++ == 0) {
    m->assert_cycle = m->cycles;
    const char* base = filename ? std::strrchr(filename, '/') : nullptr;
    m->assert_location = std::string(base ? base + 1 : (filename ? filename : "?")) + ":" + std::to_string(linenum);
    if (hier != nullptr && hier[0] != '\0') m->assert_location += std::string(" (") + hier + ")";
  }
}

VTA_TSIM_API int vta_tsim_vl_printf(const char* format, ...) {
  va_list ap, again;
  va_start(ap, format);
  va_copy(again, ap);
  char small[512];
  const int n = std::vsnprintf(small, sizeof small, format, ap);
  va_end(ap);
  std::string text;
  if (n >= 0 && static_cast<size_t>(n) >= sizeof small) {  // longer than the stack buffer
    text.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(&text[0], text.size(), format, again);
    text.resize(static_cast<size_t>(n));
  } else if (n >= 0) {
    text = small;
  }
  va_end(again);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  Model* m = g_current;
  if (m != nullptr && m->assert_text.empty() && text.find("%Error") != std::string::npos) {
    std::string line(text);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    const size_t stamp = line.find("] %Error");  // drop the "[<time>] " prefix of $error
    if (!line.empty() && line[0] == '[' && stamp != std::string::npos) line.erase(0, stamp + 2);
    m->assert_text = line;
  }
  return n;
}

// ------------------------------------------------------------------------------------------
// C API

VTA_TSIM_API vta_tsim_t* vta_tsim_create(void* base, uint64_t size, const char* trace_path,
                                         char* err, uint64_t errlen) {
  auto fail = [&](const std::string& msg) -> vta_tsim_t* {
    set_error(msg);
    if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
    return nullptr;
  };
  if (base == nullptr || size <= kPageBytes) return fail("the DRAM arena must be non-NULL and larger than one page");
#if !VTA_TSIM_TRACE_KIND
  if (trace_path != nullptr && trace_path[0] != '\0')
    return fail("this tsim library was built without waveform support; rebuild with trace='vcd' or 'fst'");
#endif
  auto m = std::make_unique<Model>();
  m->arena = static_cast<uint8_t*>(base);
  m->arena_size = size;
  m->ctx = std::make_unique<VerilatedContext>();
  m->ctx->fatalOnError(false);
#if VTA_TSIM_TRACE_KIND
  if (trace_path != nullptr && trace_path[0] != '\0') m->ctx->traceEverOn(true);
#endif
  Verilated::threadContextp(m->ctx.get());
  m->top = std::make_unique<Vvta_tsim_top>(m->ctx.get(), "TOP");
#if VTA_TSIM_TRACE_KIND
  if (trace_path != nullptr && trace_path[0] != '\0') {
    m->trace = std::make_unique<TraceFile>();
    m->top->trace(m->trace.get(), 99);
    m->trace->open(trace_path);
    if (!m->trace->isOpen()) return fail(std::string("cannot open waveform file ") + trace_path);
  }
#endif
  Current cur(m.get());
  m->top->clk_i = 0;
  m->top->rst_ni = 1;
  m->top->eval();
  do_reset(m.get());
  return reinterpret_cast<vta_tsim_t*>(m.release());
}

VTA_TSIM_API void vta_tsim_destroy(vta_tsim_t* h) {
  if (h == nullptr) return;
  Model* m = check(h);
  if (m == nullptr) return;
  {
    Current cur(m);
    m->top->final();
#if VTA_TSIM_TRACE_KIND
    if (m->trace) m->trace->close();
#endif
  }
  m->magic = 0;
  delete m;
  // Verilator remembers the last and the current context; neither may point at the freed one.
  Verilated::threadContextp(nullptr);
  Verilated::lastContextp(nullptr);
}

VTA_TSIM_API int vta_tsim_reset(vta_tsim_t* h) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  Current cur(m);
  do_reset(m);
  return VTA_TSIM_OK;
}

VTA_TSIM_API int vta_tsim_reg_write(vta_tsim_t* h, uint32_t addr, uint32_t value) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  if (!check_reg_addr(addr)) return VTA_TSIM_BAD_ARG;
  Current cur(m);
  return reg_write(m, addr, value);
}

VTA_TSIM_API int vta_tsim_reg_read(vta_tsim_t* h, uint32_t addr, uint32_t* value) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  if (value == nullptr) {
    set_error("value pointer is NULL");
    return VTA_TSIM_BAD_ARG;
  }
  if (!check_reg_addr(addr)) return VTA_TSIM_BAD_ARG;
  Current cur(m);
  return reg_read(m, addr, value);
}

VTA_TSIM_API int vta_tsim_set_progress(vta_tsim_t* h, vta_tsim_progress_fn fn, void* user,
                                       uint64_t interval, const uint32_t* regs, int nregs) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  if (fn != nullptr && interval == 0) {
    set_error("progress interval must be at least one cycle");
    return VTA_TSIM_BAD_ARG;
  }
  if (nregs < 0 || nregs > kMaxProgressRegs || (nregs > 0 && regs == nullptr)) {
    set_error("progress registers: between 0 and 8 addresses expected");
    return VTA_TSIM_BAD_ARG;
  }
  for (int i = 0; i < nregs; ++i)
    if (!check_reg_addr(regs[i])) return VTA_TSIM_BAD_ARG;
  m->progress = fn;
  m->progress_user = user;
  m->progress_interval = interval;
  m->progress_nregs = nregs;
  for (int i = 0; i < nregs; ++i) m->progress_regs[i] = regs[i];
  return VTA_TSIM_OK;
}

namespace {

// After FINISH has retired: keep clocking until fetch has dispatched the whole stream and every
// queue is empty and every unit idle, so that no instruction of this run is left to execute
// during a later one. A design in which no unit is busy and the state stays the same for a whole
// poll interval while work remains has instructions that can never get their tokens.
int drain(Model* m, uint64_t start, uint64_t max_cycles) {
  uint32_t last = UINT32_MAX;
  for (;;) {
    uint32_t state = 0, ctrl = 0;
    int rc;
    if ((rc = reg_read(m, kRegUnitState, &state)) != VTA_TSIM_OK) return rc;
    if ((rc = reg_read(m, kRegCtrl, &ctrl)) != VTA_TSIM_OK) return rc;
    if (ctrl & kCtrlError) return VTA_TSIM_HW_ERROR;
    if (m->dram_error) return VTA_TSIM_DRAM_ERROR;
    if (!m->protocol_error.empty()) {
      set_error("memory channel protocol violation by the core: " + m->protocol_error);
      return VTA_TSIM_PROTOCOL_ERROR;
    }
    if (assertion_failed(m, start)) return VTA_TSIM_ASSERTION;
    if (state == 0) return VTA_TSIM_OK;  // every unit idle: queues empty, fetch done
    bool busy = false;
    for (int u = 0; u < 4; ++u) busy = busy || ((state >> (4 * u)) & 0xFu) == kStateBusy;
    if (!busy && state == last) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "instructions after FINISH can never run (unit state 0x%04x)", state);
      set_error(buf);
      return VTA_TSIM_UNDRAINED;
    }
    last = busy ? UINT32_MAX : state;
    if (m->cycles - start >= max_cycles) return VTA_TSIM_TIMEOUT;
    for (uint64_t i = 0; i < kPollInterval; ++i) tick(m);
  }
}

}  // namespace

VTA_TSIM_API int vta_tsim_run(vta_tsim_t* h, uint32_t insn_phys_addr, uint32_t insn_count,
                              uint64_t max_cycles) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  Current cur(m);
  m->dram_error = false;
  m->protocol_error.clear();
  clear_assertions(m);
  int rc;
  if ((rc = reg_write(m, kRegCtrl, 0)) != VTA_TSIM_OK) return rc;
  if ((rc = reg_write(m, kRegVal0, insn_count)) != VTA_TSIM_OK) return rc;
  if ((rc = reg_write(m, kRegPtr0, insn_phys_addr)) != VTA_TSIM_OK) return rc;
  if ((rc = reg_write(m, kRegCtrl, 1)) != VTA_TSIM_OK) return rc;
  const uint64_t start = m->cycles;
  struct ProbeEnd {  // closes the run's trace however the run ends
    Probe& p;
    ~ProbeEnd() {
      if (!p.on) return;
      p.flush_window(p.t);
      p.add(p.t, VTA_TSIM_PROBE_END, 0, 0);
    }
  } probe_end{m->probe};
  m->probe.start_run();
  uint64_t next_progress = m->progress ? m->progress_interval : UINT64_MAX;
  for (;;) {
    for (uint64_t i = 0; i < kPollInterval; ++i) {
      tick(m);
      if (m->dram_error || !m->protocol_error.empty()) {
        m->run_cycles = m->cycles - start;
        if (!m->protocol_error.empty()) {
          set_error("memory channel protocol violation by the core: " + m->protocol_error);
          return VTA_TSIM_PROTOCOL_ERROR;
        }
        return VTA_TSIM_DRAM_ERROR;
      }
    }
    if (assertion_failed(m, start)) {  // checked once per batch of kPollInterval cycles
      m->run_cycles = m->cycles - start;
      return VTA_TSIM_ASSERTION;
    }
    uint32_t ctrl = 0;
    if ((rc = reg_read(m, kRegCtrl, &ctrl)) != VTA_TSIM_OK) return rc;
    const uint64_t elapsed = m->cycles - start;
    if (ctrl & kCtrlError) {  // the core halted with its STATUS register set
      m->run_cycles = elapsed;
      return VTA_TSIM_HW_ERROR;
    }
    if (ctrl & kCtrlFinish) {
      m->run_cycles = elapsed;
      if ((rc = drain(m, start, max_cycles)) != VTA_TSIM_OK) return rc;
      rc = reg_write(m, kRegCtrl, 0);
      if (assertion_failed(m, start)) return VTA_TSIM_ASSERTION;
      return rc;
    }
    if (elapsed >= next_progress) {
      uint64_t retired = 0;
      for (int i = 0; i < m->progress_nregs; ++i) {
        uint32_t v = 0;
        if ((rc = reg_read(m, m->progress_regs[i], &v)) != VTA_TSIM_OK) return rc;
        retired += v;
      }
      next_progress = elapsed + m->progress_interval;
      if (m->progress(m->progress_user, elapsed, retired) != 0) {
        m->run_cycles = elapsed;
        return VTA_TSIM_STOPPED;
      }
    }
    if (elapsed >= max_cycles) {
      m->run_cycles = elapsed;
      return VTA_TSIM_TIMEOUT;
    }
  }
}

VTA_TSIM_API int vta_tsim_step(vta_tsim_t* h, uint64_t n) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  Current cur(m);
  const uint64_t start = m->cycles;
  for (uint64_t i = 0; i < n; ++i) tick(m);
  if (m->dram_error) return VTA_TSIM_DRAM_ERROR;
  return assertion_failed(m, start) ? VTA_TSIM_ASSERTION : VTA_TSIM_OK;
}

VTA_TSIM_API uint64_t vta_tsim_cycles(vta_tsim_t* h) {
  Model* m = check(h);
  return m == nullptr ? 0 : m->cycles;
}

VTA_TSIM_API uint64_t vta_tsim_run_cycles(vta_tsim_t* h) {
  Model* m = check(h);
  return m == nullptr ? 0 : m->run_cycles;
}

VTA_TSIM_API int vta_tsim_dram_error(vta_tsim_t* h, uint64_t* addr, uint32_t* nbytes,
                                     int* is_write) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  if (!m->dram_error) return 0;
  if (addr) *addr = m->dram_error_addr;
  if (nbytes) *nbytes = m->dram_error_bytes;
  if (is_write) *is_write = m->dram_error_write ? 1 : 0;
  return 1;
}

VTA_TSIM_API uint32_t vta_tsim_assertions(vta_tsim_t* h, uint64_t* cycle) {
  Model* m = check(h);
  if (m == nullptr) return 0;
  if (cycle != nullptr && m->assert_count) *cycle = m->assert_cycle;
  return m->assert_count;
}

VTA_TSIM_API int vta_tsim_set_dram(vta_tsim_t* h, uint32_t latency, uint32_t bytes_per_cycle,
                                  uint32_t max_outstanding) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  char buf[200];
  if (latency < 1 || latency > 4096 || bytes_per_cycle < 1 || bytes_per_cycle > 64 || max_outstanding > 1024) {
    std::snprintf(buf, sizeof buf, "DRAM timing (latency %u, bytes per cycle %u, outstanding %u) outside "
                  "latency 1..4096, bytes per cycle 1..64, outstanding 0..1024", latency, bytes_per_cycle,
                  max_outstanding);
    set_error(buf);
    return VTA_TSIM_BAD_ARG;
  }
  if (!m->reads.empty()) {
    set_error("the DRAM timing cannot change while read bursts are queued");
    return VTA_TSIM_BAD_ARG;
  }
  m->dram.latency = latency;
  m->dram.bytes_per_cycle = bytes_per_cycle;
  m->dram.max_outstanding = max_outstanding;
  m->credit = kCreditCap;
  m->credit_cycle = m->cycles;
  return VTA_TSIM_OK;
}

VTA_TSIM_API int vta_tsim_probe(vta_tsim_t* h, int enable, uint32_t window) {
  Model* m = check(h);
  if (m == nullptr) return VTA_TSIM_BAD_HANDLE;
  if (enable && window == 0) {
    set_error("probe window must be at least one cycle");
    return VTA_TSIM_BAD_ARG;
  }
  m->probe.on = enable != 0;
  if (enable) m->probe.window = window;
  m->probe.records.clear();
  m->probe.records.shrink_to_fit();
  m->top->probe_en_i = enable ? 1 : 0;
  return VTA_TSIM_OK;
}

VTA_TSIM_API uint64_t vta_tsim_probe_take(vta_tsim_t* h, void* out, uint64_t max_records) {
  Model* m = check(h);
  if (m == nullptr || out == nullptr) return 0;
  std::vector<ProbeRecord>& r = m->probe.records;
  const uint64_t n = r.size() < max_records ? r.size() : max_records;
  std::memcpy(out, r.data(), n * sizeof(ProbeRecord));
  r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

VTA_TSIM_API uint64_t vta_tsim_probe_count(vta_tsim_t* h) {
  Model* m = check(h);
  return m == nullptr ? 0 : m->probe.records.size();
}

VTA_TSIM_API int vta_tsim_trace_kind(void) { return VTA_TSIM_TRACE_KIND; }

VTA_TSIM_API const char* vta_tsim_last_error(void) { return g_error.c_str(); }
