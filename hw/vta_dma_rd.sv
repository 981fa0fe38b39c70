// 2-D read engine shared by the load unit and by compute's UOP/ACC loads (ISA reference 4.2).
// From the geometry of the LOAD instruction insn_i it (1) issues read bursts of at most
// MAX_BURST_BEATS beats that never cross a BURST_BOUNDARY_BYTES boundary, one or more per row,
// and (2) turns the returned beats and the zero padding into scratchpad writes, one per cycle:
//   data write: wr_idx_o = element index, wr_sub_o = beat within the element (elements of 8
//               bytes or more), wr_half_o = 2'b11; for 4-byte elements (uops) a beat holds two
//               elements: wr_idx_o is the index of the low half's element, wr_half_o says
//               which halves belong to the row (the first may start in the high half).
//   pad write:  wr_pad_o = 1, wr_idx_o = element to zero (only in cycles without data).
// Element (yy, xx) of the padded rectangle goes to sram_base + yy*W + xx, W = x_pad_0 + x_size
// + x_pad_1; sram_end_o = sram_base + W*H is the end of the padded rectangle, which the caller
// checks against its buffer before start_i: it is computed only in the cycles of check_i (the
// caller's decode of the instruction) and is 0 in the others, so a simulator does not multiply
// out the padded area every cycle. insn_i and elem_log_i are read only in the cycles of start_i
// and check_i: what the engine needs while busy is latched at start_i.
module vta_dma_rd import vta_pkg::*; (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,         // insn_i has x_size != 0 and fits its buffer
  input  logic [INSN_BITS-1:0] insn_i,
  input  logic [4:0]  elem_log_i,      // log2 of the DRAM element bytes, >= 2
  input  logic        check_i,         // the caller checks sram_end_o in this cycle (vta_compute_ov;
                                       // the others use mem_padded_end in their decode)
  output logic [47:0] sram_end_o,      // end of the padded rectangle in the buffer (check_i)
  output logic        busy_o,
  // read requests and responses
  output logic        req_valid_o,
  input  logic        req_ready_i,
  output logic [31:0] req_addr_o,
  output logic [7:0]  req_len_o,
  input  logic        rsp_valid_i,
  input  logic [63:0] rsp_data_i,
  // scratchpad writes
  output logic        wr_valid_o,
  output logic        wr_pad_o,
  output logic [31:0] wr_idx_o,
  output logic [15:0] wr_sub_o,
  output logic [1:0]  wr_half_o,
  output logic [63:0] wr_data_o
);
  // ------------------------------------------------------------------ geometry
  // The fields of insn_i are read only in the cycle of start_i (and of check_i): everything the
  // engine needs while busy is latched into the g_*_q registers at start_i, so a simulator does
  // not extract and combine the fields of the 128-bit instruction in every cycle.
  logic [15:0] x_size, y_size, x_stride;
  logic [3:0]  x_pad_0, x_pad_1, y_pad_0, y_pad_1;
  logic [31:0] sram_base;
  assign x_size    = insn_i[MEM_X_SIZE_LO +: 16];
  assign y_size    = insn_i[MEM_Y_SIZE_LO +: 16];
  assign x_stride  = insn_i[MEM_X_STRIDE_LO +: 16];
  assign x_pad_0   = insn_i[MEM_X_PAD_0_LO +: 4];
  assign x_pad_1   = insn_i[MEM_X_PAD_1_LO +: 4];
  assign y_pad_0   = insn_i[MEM_Y_PAD_0_LO +: 4];
  assign y_pad_1   = insn_i[MEM_Y_PAD_1_LO +: 4];
  assign sram_base = 32'(insn_i[MEM_SRAM_BASE_LO +: 16]);

  always_comb begin
    sram_end_o = '0;
    if (check_i) begin
      sram_end_o = mem_padded_end(insn_i);
    end
  end

  // latched at start_i
  logic [31:0] g_x_size_q;      // x_size
  logic [31:0] g_x_last_q;      // x_size - 1
  logic [31:0] g_width_q;       // padded row width in elements
  logic [31:0] g_height_q;      // padded rows
  logic [31:0] g_row_bytes_q;   // x_size * elem bytes
  logic [31:0] g_stride_q;      // x_stride * elem bytes
  logic [31:0] g_pad_x0_q;      // x_pad_0: the first data column
  logic [31:0] g_data_x1_q;     // x_pad_0 + x_size: the first right-pad column
  logic [31:0] g_data_y0_q;     // y_pad_0: the first data row
  logic [31:0] g_data_y1_q;     // y_pad_0 + y_size: the first bottom-pad row
  logic [15:0] g_sub_last_q;    // beats per element - 1 (elements >= 8 bytes)
  logic        g_narrow_q;      // 4-byte elements

  function automatic logic [31:0] row_beats(logic [2:0] addr_lo, logic [31:0] nbytes);
    return ({29'd0, addr_lo} + nbytes + 32'd7) >> 3;
  endfunction

  // ------------------------------------------------------------------ request generator
  typedef enum logic [1:0] {RqIdle, RqRow, RqBurst} rq_state_e;
  rq_state_e   rq_state_q;
  logic [31:0] rq_row_addr_q;                 // byte address of the current row
  logic [31:0] rq_addr_q;                     // beat address of the next burst
  logic [31:0] rq_rem_q;                      // beats left in the row
  logic [15:0] rq_rows_q;                     // rows left, the current one included
  logic [31:0] burst;
  logic [31:0] burst_q;                       // mem_burst_beats(rq_addr_q, rq_rem_q)

  // Beats of the next burst: burst_q is a register written with rq_addr_q and rq_rem_q (always
  // vta_pkg::mem_burst_beats of them), which a simulator computes only when they change, not
  // every cycle.

  assign burst = burst_q;

  assign req_valid_o = (rq_state_q == RqBurst);
  assign req_addr_o  = rq_addr_q;
  assign req_len_o   = 8'(burst - 32'd1);

  // ------------------------------------------------------------------ data consumer
  logic        dt_active_q;
  logic [15:0] dt_rows_q;                  // data rows left
  logic [31:0] dt_row_idx_q;               // SRAM index of the row's first data element
  logic [31:0] dt_row_addr_q;
  logic [31:0] dt_x_q;                     // element of the beat (low half for 4-byte elements)
  logic [15:0] dt_sub_q;
  logic        row_end;
  logic        lo_ok, hi_ok;

  // For 4-byte elements dt_x_q is signed: -1 when the row starts in a beat's high half.
  assign lo_ok = !dt_x_q[31] && (dt_x_q < g_x_size_q);
  assign hi_ok = ((dt_x_q + 32'd1) < g_x_size_q);

  always_comb begin
    if (g_narrow_q) row_end = ((dt_x_q + 32'd2) >= g_x_size_q);
    else            row_end = (dt_x_q == g_x_last_q) && (dt_sub_q == g_sub_last_q);
  end

  // x of the first beat's low half: -1 when a 4-byte-element row starts mid-beat
  function automatic logic [31:0] first_x(logic addr_bit2, logic is_narrow);
    return (is_narrow && addr_bit2) ? 32'hFFFF_FFFF : 32'd0;
  endfunction

  // ------------------------------------------------------------------ pad walker
  logic        pd_active_q;
  logic [31:0] pd_r_q, pd_c_q, pd_row_idx_q;
  logic        pd_data_row_q;  // g_data_y0_q <= pd_r_q < g_data_y1_q (written with pd_r_q)
  logic        pd_data_row, pd_emit;

  assign pd_data_row = pd_data_row_q;
  // Emit when the walker sits on a pad element and no data beat uses the write port.
  assign pd_emit = pd_active_q && !(dt_active_q && rsp_valid_i) && (pd_c_q < g_width_q)
                   && !(pd_data_row && pd_c_q == g_pad_x0_q);

  // ------------------------------------------------------------------ outputs
  always_comb begin
    wr_valid_o = 1'b0;
    wr_pad_o   = 1'b0;
    wr_idx_o   = '0;
    wr_sub_o   = '0;
    wr_half_o  = 2'b00;
    wr_data_o  = rsp_data_i;
    if (dt_active_q && rsp_valid_i) begin
      wr_valid_o = 1'b1;
      wr_idx_o   = dt_row_idx_q + dt_x_q;
      wr_sub_o   = dt_sub_q;
      wr_half_o  = g_narrow_q ? {hi_ok, lo_ok} : 2'b11;
    end else if (pd_emit) begin
      wr_valid_o = 1'b1;
      wr_pad_o   = 1'b1;
      wr_idx_o   = pd_row_idx_q + pd_c_q;
      wr_half_o  = g_narrow_q ? 2'b01 : 2'b11;
      wr_data_o  = '0;
    end
  end

  assign busy_o = (rq_state_q != RqIdle) || dt_active_q || pd_active_q;

  // The walkers' registers. Every one of them that the process reads is read at the top of the
  // enabled branch, into an automatic copy, before any of them is assigned: a simulator then
  // updates them in place (Verilator keeps a shadow copy of a register read after an assignment
  // to it in its process, copied in and back every cycle, also while the engine is idle).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rq_state_q    <= RqIdle;
      rq_row_addr_q <= '0;
      rq_addr_q     <= '0;
      rq_rem_q      <= '0;
      rq_rows_q     <= '0;
      dt_active_q   <= 1'b0;
      dt_rows_q     <= '0;
      dt_row_idx_q  <= '0;
      dt_row_addr_q <= '0;
      dt_x_q        <= '0;
      dt_sub_q      <= '0;
      pd_active_q   <= 1'b0;
      pd_r_q        <= '0;
      pd_c_q        <= '0;
      pd_row_idx_q  <= '0;
      burst_q       <= '0;
      pd_data_row_q <= 1'b0;
    end else if (start_i || busy_o) begin
      // Start (only from idle: StartWhenIdle): the three walkers take their first state from
      // the instruction. A busy engine moves in the other branch; an idle one without start_i
      // does not move (every next state equals the state), so a simulator evaluates neither
      // branch while the engine is idle (logic outside a clocked enable is evaluated every cycle).
      automatic rq_state_e   rq_state    = rq_state_q;
      automatic logic [31:0] rq_row_addr = rq_row_addr_q;
      automatic logic [31:0] rq_addr     = rq_addr_q;
      automatic logic [31:0] rq_rem      = rq_rem_q;
      automatic logic [15:0] rq_rows     = rq_rows_q;
      automatic logic [31:0] rq_burst    = burst;
      automatic logic        dt_active   = dt_active_q;
      automatic logic [15:0] dt_rows     = dt_rows_q;
      automatic logic [31:0] dt_row_idx  = dt_row_idx_q;
      automatic logic [31:0] dt_row_addr = dt_row_addr_q;
      automatic logic [31:0] dt_x        = dt_x_q;
      automatic logic [15:0] dt_sub      = dt_sub_q;
      automatic logic        dt_row_end  = row_end;
      automatic logic        pd_active   = pd_active_q;
      automatic logic [31:0] pd_r        = pd_r_q;
      automatic logic [31:0] pd_c        = pd_c_q;
      automatic logic [31:0] pd_row_idx  = pd_row_idx_q;
      automatic logic        pd_on_data  = pd_data_row && pd_c_q == g_pad_x0_q;
      automatic logic        pd_emit_now = pd_emit;
      if (start_i) begin
        automatic logic [31:0] dram_addr, width, height;
        automatic logic        narrow;
        dram_addr = insn_i[MEM_DRAM_BASE_LO +: 32] << elem_log_i;
        width     = 32'(x_pad_0) + 32'(x_size) + 32'(x_pad_1);
        height    = 32'(y_pad_0) + 32'(y_size) + 32'(y_pad_1);
        narrow    = (elem_log_i < 5'd3);
        // request generator
        rq_row_addr_q <= dram_addr;
        rq_rows_q     <= y_size;
        rq_state_q    <= (y_size == 16'd0) ? RqIdle : RqRow;
        // data consumer
        dt_active_q   <= (y_size != 16'd0);
        dt_rows_q     <= y_size;
        dt_row_idx_q  <= sram_base + 32'(y_pad_0) * width + 32'(x_pad_0);
        dt_row_addr_q <= dram_addr;
        dt_x_q        <= first_x(dram_addr[2], narrow);
        dt_sub_q      <= '0;
        // pad walker
        pd_active_q  <= (height != 32'd0) && ((height != 32'(y_size)) || (x_pad_0 != 4'd0)
                                              || (x_pad_1 != 4'd0));
        pd_r_q       <= '0;
        pd_c_q       <= '0;
        pd_row_idx_q <= sram_base;
        pd_data_row_q <= (y_pad_0 == 4'd0) && (32'(y_size) != 32'd0);
      end else begin
        // request generator
        unique case (rq_state)
          RqIdle: ;
          RqRow: begin
            automatic logic [31:0] addr = {rq_row_addr[31:3], 3'd0};
            automatic logic [31:0] rem  = row_beats(rq_row_addr[2:0], g_row_bytes_q);
            rq_addr_q  <= addr;
            rq_rem_q   <= rem;
            burst_q    <= mem_burst_beats(addr[6:3], rem);
            rq_state_q <= RqBurst;
          end
          RqBurst: begin
            if (req_ready_i) begin
              automatic logic [31:0] addr = rq_addr + (rq_burst << 3);
              automatic logic [31:0] rem  = rq_rem - rq_burst;
              rq_addr_q <= addr;
              rq_rem_q  <= rem;
              burst_q   <= mem_burst_beats(addr[6:3], rem);
              if (rq_rem == rq_burst) begin
                rq_rows_q     <= rq_rows - 16'd1;
                rq_row_addr_q <= rq_row_addr + g_stride_q;
                rq_state_q    <= (rq_rows == 16'd1) ? RqIdle : RqRow;
              end
            end
          end
          default: rq_state_q <= RqIdle;
        endcase
        // data consumer
        if (dt_active && rsp_valid_i) begin
          if (dt_row_end) begin
            dt_rows_q     <= dt_rows - 16'd1;
            dt_active_q   <= (dt_rows != 16'd1);
            dt_row_idx_q  <= dt_row_idx + g_width_q;
            dt_row_addr_q <= dt_row_addr + g_stride_q;
            dt_x_q        <= first_x(dt_row_addr[2] ^ g_stride_q[2], g_narrow_q);
            dt_sub_q      <= '0;
          end else if (g_narrow_q) begin
            dt_x_q <= dt_x + 32'd2;
          end else if (dt_sub == g_sub_last_q) begin
            dt_x_q   <= dt_x + 32'd1;
            dt_sub_q <= '0;
          end else begin
            dt_sub_q <= dt_sub + 16'd1;
          end
        end
        // pad walker
        if (pd_active) begin
          if (pd_c >= g_width_q) begin
            pd_r_q        <= pd_r + 32'd1;
            pd_data_row_q <= (pd_r + 32'd1 >= g_data_y0_q) && (pd_r + 32'd1 < g_data_y1_q);
            pd_c_q       <= '0;
            pd_row_idx_q <= pd_row_idx + g_width_q;
            if (pd_r + 32'd1 == g_height_q) pd_active_q <= 1'b0;
          end else if (pd_on_data) begin
            pd_c_q <= g_data_x1_q;  // skip the data
          end else if (pd_emit_now) begin
            pd_c_q <= pd_c + 32'd1;
          end
        end
      end
    end
  end

  // The geometry registers: loaded at start_i only (enabled registers).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      g_x_size_q    <= '0;
      g_x_last_q    <= '0;
      g_width_q     <= '0;
      g_height_q    <= '0;
      g_row_bytes_q <= '0;
      g_stride_q    <= '0;
      g_pad_x0_q    <= '0;
      g_data_x1_q   <= '0;
      g_data_y0_q   <= '0;
      g_data_y1_q   <= '0;
      g_sub_last_q  <= '0;
      g_narrow_q    <= 1'b0;
    end else if (start_i) begin
      g_x_size_q    <= 32'(x_size);
      g_x_last_q    <= 32'(x_size) - 32'd1;
      g_width_q     <= 32'(x_pad_0) + 32'(x_size) + 32'(x_pad_1);
      g_height_q    <= 32'(y_pad_0) + 32'(y_size) + 32'(y_pad_1);
      g_row_bytes_q <= 32'(x_size) << elem_log_i;
      g_stride_q    <= 32'(x_stride) << elem_log_i;
      g_pad_x0_q    <= 32'(x_pad_0);
      g_data_x1_q   <= 32'(x_pad_0) + 32'(x_size);
      g_data_y0_q   <= 32'(y_pad_0);
      g_data_y1_q   <= 32'(y_pad_0) + 32'(y_size);
      g_sub_last_q  <= (elem_log_i < 5'd3) ? 16'd0 : 16'((32'd1 << (elem_log_i - 5'd3)) - 32'd1);
      g_narrow_q    <= (elem_log_i < 5'd3);
    end
  end

  // the read engine uses only the geometry of the instruction
  logic unused;
  assign unused = ^insn_i;

  // Checks: same-cycle implications over the values before the clock edge (what a concurrent
  // assertion samples), as immediate assertions on the clock edge that run only in an edge where
  // one of the checks fails (a simulator evaluates the checks once, together, and copies no
  // sampled values; see vta_insn_seq).
  // ReqHeld looks one edge back: a request not accepted at an edge (req_held_q; its address and
  // length are kept only then) is offered again, unchanged, at the next one.
  logic        req_held_q;
  logic [31:0] held_addr_q;
  logic [7:0]  held_len_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) req_held_q <= 1'b0;
    else         req_held_q <= req_valid_o && !req_ready_i;
  end
  always_ff @(posedge clk_i) begin
    if (req_valid_o && !req_ready_i) begin
      held_addr_q <= req_addr_o;
      held_len_q  <= req_len_o;
    end
  end

  // The checks are about a start, a response or a held request, so they are computed only in an
  // edge with one of these, inside the clocked process (continuous assignments are computed
  // every cycle).
  always_ff @(posedge clk_i) begin
    if (rst_ni && (start_i || rsp_valid_i || req_held_q)) begin
      automatic logic start_ok, data_ok, req_ok;
      start_ok = !start_i || !busy_o;
      data_ok  = !rsp_valid_i || dt_active_q;
      req_ok   = !req_held_q || (req_valid_o && req_addr_o == held_addr_q && req_len_o == held_len_q);
      if (!(start_ok && data_ok && req_ok)) begin
        StartWhenIdle: assert (start_ok)
          else $error("vta_dma_rd: start while busy");
        NoStrayData: assert (data_ok)
          else $error("vta_dma_rd: read data with no transfer in progress");
        ReqHeld: assert (req_ok)
          else $error("vta_dma_rd: request dropped before it was accepted");
      end
    end
  end
endmodule : vta_dma_rd
