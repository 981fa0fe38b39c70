// Store unit: executes STORE from its queue, one at a time (ISA reference 4.3, DESIGN.md):
// element x of row y is the low OUT_WIDTH bits of every lane of ACC[sram_base + y*x_size + x],
// read when the store executes, written to DRAM element dram_base + y*x_stride + x.
// Tokens: pops g2s (pop_prev_dep) before, pushes s2g (push_prev_dep) after. x_size == 0 is a
// no-op. A source row beyond the acc buffer raises ERR_SRAM_INDEX (FIELD_SRAM_END).
// Each row is written in bursts of at most MAX_BURST_BEATS beats that never cross a
// BURST_BOUNDARY_BYTES boundary. Three parts run side by side: the burst walk requests the
// bursts of every row in order, the element reader reads the source rows of the acc buffer
// ahead into a two-element buffer (they are consecutive: sram_base + y*x_size + x), and the
// beat stream sends OUT_ELEM_BYTES / 8 beats per element into whichever burst is open. A
// burst does not wait for the ack of the previous one; the store is done when every burst
// has been acknowledged. With a write channel that takes a beat per cycle the store streams
// at the bus rate: OUT_ELEM_BYTES / 8 cycles per element.
module vta_store import vta_pkg::*; (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  // instruction queue head
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  // tokens
  input  logic                  tok_avail_i,   // g2s
  output logic                  tok_pop_o,     // g2s
  output logic                  tok_push_o,    // s2g
  // acc SRAM read port
  output logic                  acc_re_o,
  output logic [LOG_ACC_BUFF_DEPTH-1:0] acc_raddr_o,
  input  logic [ACC_ELEM_BITS-1:0] acc_rdata_i,
  // write client
  output logic                  wr_req_valid_o,
  input  logic                  wr_req_ready_i,
  output logic [31:0]           wr_req_addr_o,
  output logic [7:0]            wr_req_len_o,
  output logic                  wr_valid_o,
  input  logic                  wr_ready_i,
  output logic [63:0]           wr_data_o,
  output logic                  wr_last_o,
  input  logic                  wr_ack_i,
  // error and status
  output logic                  err_o,
  output logic [7:0]            err_field_o,
  output logic [31:0]           err_value_o,
  output logic [31:0]           err_limit_o,
  output logic [31:0]           err_index_o,
  output logic [1:0]            state_o,
  output logic [31:0]           index_o,
  output logic                  retire_o
);
  localparam int unsigned ElemLog = $clog2(OUT_ELEM_BYTES);
  localparam int unsigned SubLast = OUT_ELEM_BYTES / 8 - 1;
  localparam int unsigned Lanes = BATCH * BLOCK_OUT;

  // the instruction being executed
  logic [INSN_BITS-1:0] insn;
  logic [31:0]          insn_index;

  logic [15:0] x_size, y_size, x_stride, sram_base;
  logic [31:0] dram_base;
  logic [47:0] area_end;
  assign sram_base = insn[MEM_SRAM_BASE_LO +: 16];
  assign dram_base = insn[MEM_DRAM_BASE_LO +: 32];
  assign y_size    = insn[MEM_Y_SIZE_LO +: 16];
  assign x_size    = insn[MEM_X_SIZE_LO +: 16];
  assign x_stride  = insn[MEM_X_STRIDE_LO +: 16];

  // ------------------------------------------------------------------ burst walk
  logic        aw_active_q;              // bursts left to request
  logic [15:0] rows_q;                   // rows left, the current one included
  logic [31:0] row_addr_q;               // byte address of the current row
  logic [31:0] addr_q;                   // byte address of the next burst
  logic [31:0] rem_q;                    // beats of the row not yet requested
  logic [31:0] burst;
  logic [31:0] burst_q;                  // mem_burst_beats(addr_q[6:3], rem_q)
  logic        req_fire;

  // Beats of the next burst: burst_q is a register written with addr_q and rem_q (always
  // vta_pkg::mem_burst_beats of them), which a simulator computes only when they change.

  assign burst = burst_q;

  // ------------------------------------------------------------------ element reader
  localparam int unsigned BufElems = 2;
  logic [31:0] src_q;                    // acc row of the next element to read
  logic [31:0] rd_left_q;                // elements not yet read
  logic        inflight_q;               // an acc read was issued last cycle
  logic [1:0]  cnt_q;                    // elements in the buffer
  logic        rptr_q, wptr_q;
  logic [OUT_ELEM_BITS-1:0] elem_q [BufElems];

  // ------------------------------------------------------------------ beat stream
  logic        open_q;                   // a burst is accepted and not all its beats sent
  logic [7:0]  blen_q;                   // beats left in the open burst - 1
  logic [15:0] sub_q;                    // beat within the head element
  logic [15:0] acks_q;                   // bursts requested and not yet acknowledged
  logic        beat_fire, pop, read;

  // ------------------------------------------------------------------ control
  // Decode: an empty rectangle is done at once, a source range beyond the acc buffer fails, any
  // other store starts; it is done once every burst is requested, every element sent and every
  // burst acknowledged.
  logic       decode, exec, start, done, fail, empty, drained;
  logic [1:0] tok_pop, tok_push;
  assign drained  = !aw_active_q && (rd_left_q == '0) && !inflight_q && (cnt_q == '0) && !open_q
                 && (acks_q == '0);
  assign done     = (decode && empty) || (exec && drained);
  // the checks of the cycle the instruction is taken, evaluated only in that cycle (area_end is
  // 0 in the others)
  always_comb begin
    empty    = 1'b0;
    area_end = '0;
    fail     = 1'b0;
    if (decode) begin
      empty    = (x_size == '0) || (y_size == '0);
      area_end = 48'(sram_base) + 48'(x_size) * 48'(y_size);
      fail     = !empty && (area_end > 48'(ACC_BUFF_DEPTH));
    end
  end

  vta_insn_seq #(.UsePrevDep(1'b1), .UseNextDep(1'b0)) u_seq (
    .clk_i,
    .rst_ni,
    .halt_i,
    .q_valid_i,
    .q_ready_o,
    .q_data_i,
    .tok_avail_i  ({1'b0, tok_avail_i}),
    .tok_pop_o    (tok_pop),
    .tok_push_o   (tok_push),
    .insn_o       (insn),
    .insn_index_o (insn_index),
    .decode_o     (decode),
    .start_o      (start),
    .exec_o       (exec),
    .done_i       (done),
    .err_i        (fail),
    .err_o,
    .state_o,
    .index_o,
    .retire_o
  );
  assign tok_pop_o  = tok_pop[0];
  assign tok_push_o = tok_push[0];

  // burst walk
  assign wr_req_valid_o = aw_active_q;
  assign wr_req_addr_o  = addr_q;
  assign wr_req_len_o   = 8'(burst - 32'd1);
  assign req_fire       = wr_req_valid_o && wr_req_ready_i;

  // beat stream: the head element's beats go into the open burst
  assign wr_valid_o = open_q && (cnt_q != '0);
  assign wr_last_o  = (blen_q == '0);
  assign wr_data_o  = 64'(elem_q[rptr_q] >> (32'(sub_q) * 32'd64));
  assign beat_fire  = wr_valid_o && wr_ready_i;
  assign pop        = beat_fire && (sub_q == 16'(SubLast));

  // element reader: keep the buffer full (a read in flight counts as an entry)
  assign read        = exec && (rd_left_q != '0)
                    && (32'(cnt_q) + 32'(inflight_q) - 32'(pop) < 32'(BufElems));
  assign acc_re_o    = read;
  assign acc_raddr_o = src_q[LOG_ACC_BUFF_DEPTH-1:0];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      aw_active_q <= 1'b0;
      rows_q      <= '0;
      row_addr_q  <= '0;
      addr_q      <= '0;
      rem_q       <= '0;
      burst_q     <= '0;
      src_q       <= '0;
      rd_left_q   <= '0;
      inflight_q  <= 1'b0;
      cnt_q       <= '0;
      rptr_q      <= 1'b0;
      wptr_q      <= 1'b0;
      open_q      <= 1'b0;
      blen_q      <= '0;
      sub_q       <= '0;
      acks_q      <= '0;
    end else if (start || exec) begin
      // Outside the execution of a store (and its start) nothing moves: every next state equals
      // the state (no burst, element or ack is outstanding, WalkOnlyInExec and AckExpected), so
      // the next state is computed only then, in this enabled branch, and a simulator evaluates
      // none of it while the store is idle (logic outside a clocked enable is evaluated every
      // cycle). The registers this process reads are read first, into automatic copies, before
      // any of them is assigned: a simulator then updates them in place (Verilator keeps a
      // shadow copy of a register read after an assignment to it in its process, copied in and
      // back every cycle, also while the store is idle).
      automatic logic [15:0] rows     = rows_q;
      automatic logic [31:0] row_addr = row_addr_q;
      automatic logic [31:0] addr     = addr_q;
      automatic logic [31:0] rem      = rem_q;
      automatic logic [31:0] src      = src_q;
      automatic logic [31:0] rd_left  = rd_left_q;
      automatic logic [7:0]  blen     = blen_q;
      automatic logic [15:0] sub      = sub_q;
      automatic logic [31:0] nbeats   = burst;
      // burst walk
      if (start) begin
        automatic logic [31:0] addr0 = dram_base << ElemLog;
        automatic logic [31:0] rem0  = 32'(x_size) << (ElemLog - 3);
        aw_active_q <= 1'b1;
        rows_q      <= y_size;
        row_addr_q  <= addr0;
        addr_q      <= addr0;
        rem_q       <= rem0;
        burst_q     <= mem_burst_beats(addr0[6:3], rem0);
      end else if (req_fire) begin
        if (rem != nbeats) begin
          automatic logic [31:0] addr1 = addr + (nbeats << 3);
          automatic logic [31:0] rem1  = rem - nbeats;
          addr_q  <= addr1;
          rem_q   <= rem1;
          burst_q <= mem_burst_beats(addr1[6:3], rem1);
        end else if (rows == 16'd1) begin  // the last burst of the last row
          aw_active_q <= 1'b0;
          addr_q      <= addr + (nbeats << 3);
          rem_q       <= '0;
          burst_q     <= '0;               // mem_burst_beats of any address and 0 beats
        end else begin                     // the row's last burst: on to the next row
          automatic logic [31:0] addr1 = row_addr + (32'(x_stride) << ElemLog);
          automatic logic [31:0] rem1  = 32'(x_size) << (ElemLog - 3);
          rows_q     <= rows - 16'd1;
          row_addr_q <= addr1;
          addr_q     <= addr1;
          rem_q      <= rem1;
          burst_q    <= mem_burst_beats(addr1[6:3], rem1);
        end
      end
      // element reader
      if (start) begin
        src_q     <= 32'(sram_base);
        rd_left_q <= 32'(x_size) * 32'(y_size);
      end else if (read) begin
        src_q     <= src + 32'd1;
        rd_left_q <= rd_left - 32'd1;
      end
      inflight_q <= read;
      cnt_q      <= cnt_q + (inflight_q ? 2'd1 : 2'd0) - (pop ? 2'd1 : 2'd0);
      if (pop) rptr_q <= !rptr_q;
      if (inflight_q) wptr_q <= !wptr_q;
      // beat stream: a burst accepted in this cycle opens (its beats start next cycle)
      if (req_fire) begin
        open_q <= 1'b1;
        blen_q <= 8'(nbeats - 32'd1);
      end else if (beat_fire) begin
        blen_q <= blen - 8'd1;
        if (blen == '0) open_q <= 1'b0;
      end
      if (beat_fire) sub_q <= pop ? '0 : sub + 16'd1;
      acks_q <= acks_q + (req_fire ? 16'd1 : 16'd0) - (wr_ack_i ? 16'd1 : 16'd0);
    end
  end

  // the element buffer takes the acc row read in the previous cycle: the low OUT_WIDTH bits of
  // each lane (selected inside the enable, so a simulator does not evaluate it while the store
  // is idle and the acc read port serves other units)
  always_ff @(posedge clk_i) begin
    if (inflight_q) begin
      for (int unsigned e = 0; e < Lanes; e++) begin
        elem_q[wptr_q][e*OUT_WIDTH +: OUT_WIDTH] <= acc_rdata_i[e*ACC_WIDTH +: OUT_WIDTH];
      end
    end
  end

  assign err_field_o = 8'(FIELD_SRAM_END);
  assign err_value_o = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
  assign err_limit_o = ACC_BUFF_DEPTH;
  assign err_index_o = insn_index;

  // the g2s / s2g channels only (the store has no next stage); of the instruction the store
  // reads only the geometry (opcode and flags are the sequencer's)
  logic unused;
  assign unused = ^{tok_pop[1], tok_push[1], insn};

  // Checks: same-cycle implications over the values before the clock edge (what a concurrent
  // assertion samples), as immediate assertions on the clock edge that run only in an edge where
  // one of the checks fails (a simulator evaluates the checks once, together, and copies no
  // sampled values; see vta_insn_seq).
  // Each can fail only with an acc read, a write ack, or a burst, element or read in flight, so
  // they are computed only in an edge with one of these, inside the clocked process (continuous
  // assignments are computed every cycle, also while the store is idle).
  always_ff @(posedge clk_i) begin
    if (rst_ni && (acc_re_o || wr_ack_i || aw_active_q || open_q || cnt_q != '0 || inflight_q)) begin
      automatic logic source_ok, buffer_ok, ack_ok, walk_ok;
      source_ok = !acc_re_o || src_q < ACC_BUFF_DEPTH;
      buffer_ok = 32'(cnt_q) + 32'(inflight_q) <= 32'(BufElems);
      ack_ok    = !wr_ack_i || acks_q != '0;
      walk_ok   = !(aw_active_q || open_q || cnt_q != '0) || exec;
      if (!(source_ok && buffer_ok && ack_ok && walk_ok)) begin
        SourceInRange: assert (source_ok)
          else $error("vta_store: acc read out of range");
        BufferBound: assert (buffer_ok)
          else $error("vta_store: element buffer overrun");
        AckExpected: assert (ack_ok)
          else $error("vta_store: write ack without an outstanding burst");
        WalkOnlyInExec: assert (walk_ok)
          else $error("vta_store: row walk outside the execution of a store");
      end
    end
  end
endmodule : vta_store
