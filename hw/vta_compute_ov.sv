// Compute unit with the option COMPUTE_OVERLAP: a GEMM and an ALU instruction at the same time.
// Two lanes, each in order with one instruction in flight (vta_compute_lane):
//   lane G  GEMM (and the accumulator reset);
//   lane M  ALU, LOAD UOP / ACC / ACC_8BIT (the read engine), FINISH and the no-ops (a LOAD of
//           x_size 0, an empty GEMM / ALU loop), which take one cycle as in vta_compute.
// Instructions are taken from the queue in program order, at most one per cycle: the queue head
// is taken (its tokens popped, the queue popped) once its tokens are there, its lane is free,
// fewer than RobDepth taken instructions wait to retire, its footprint is known and it does not
// conflict with the instruction in flight in the other lane. Retirement (the token pushes,
// FINISH) is in program order, one per cycle, in or after the cycle the lane is done.
// Footprints are intervals (an instruction's lowest and highest index):
//   D  acc rows written (and read): a GEMM's or ALU's dst, a LOAD ACC's padded rectangle;
//   S  acc rows read only: a tensor ALU's src;
//   U  uop entries: read by a GEMM / ALU ([uop_bgn, uop_end - 1]), written by a LOAD UOP.
// Two instructions conflict when D meets D or S, or U meets U with one of them a LOAD UOP; the
// younger one then waits until the older one is done (its last acc write, in the next cycle, is
// seen by the younger one's first read two cycles after it is taken at the earliest). A GEMM's
// or ALU's D and S come from its micro-ops: the footprint scanner reads the head's uop range,
// two entries a cycle on a third uop read port, from the first cycle the head is in the queue and
// no LOAD UOP into that range is in flight; the lowest and highest dst (src) index plus the
// loop offsets (iter - 1) * factor give the interval, ready ceil(n / 2) + 1 cycles after the
// scan began (n = uop_end - uop_bgn). Other instructions' footprints come from their fields.
// An index out of range stops the unit with ERR_SRAM_INDEX as in vta_compute (an instruction of
// the other lane may have run on by then; the program's results are not defined after an error).
module vta_compute_ov import vta_pkg::*; (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  input  logic                  l2g_avail_i,
  input  logic                  s2g_avail_i,
  output logic                  l2g_pop_o,
  output logic                  s2g_pop_o,
  output logic                  g2l_push_o,
  output logic                  g2s_push_o,
  output logic                  finish_o,
  output logic [1:0]            req_valid_o,
  input  logic [1:0]            req_ready_i,
  output logic [31:0]           req_addr_o,
  output logic [7:0]            req_len_o,
  input  logic [1:0]            rsp_valid_i,
  input  logic [63:0]           rsp_data_i,
  // uop SRAM, two banks (even / odd uop index), three read ports: 0 lane G, 1 lane M, 2 scanner
  output logic [1:0]            uop_we_o,
  output logic [1:0][LOG_UOP_BUFF_DEPTH-2:0] uop_waddr_o,
  output logic [1:0][31:0]      uop_wdata_o,
  output logic [2:0]            uop_re_o,
  output logic [2:0][1:0][LOG_UOP_BUFF_DEPTH-2:0] uop_raddr_o,   // [port][bank]
  input  logic [2:0][1:0][31:0] uop_rdata_i,
  output logic                  inp_re_o,
  output logic [LOG_INP_BUFF_DEPTH-1:0] inp_raddr_o,
  input  logic [INP_ELEM_BITS-1:0] inp_rdata_i,
  output logic                  wgt_re_o,
  output logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_raddr_o,
  input  logic [WGT_ELEM_BITS-1:0] wgt_rdata_i,
  // acc memory (vta_acc2w): write port 0 lane G, 1 lane M; reads 0 G dst, 1 M dst, 2 M src
  output logic [1:0]            acc_we_o,
  output logic [1:0][ACC_ELEM_BYTES/8-1:0] acc_wmask_o,
  output logic [1:0][LOG_ACC_BUFF_DEPTH-1:0] acc_waddr_o,
  output logic [1:0][ACC_ELEM_BITS-1:0] acc_wdata_o,
  output logic [2:0]            acc_re_o,
  output logic [2:0][LOG_ACC_BUFF_DEPTH-1:0] acc_raddr_o,
  input  logic [2:0][ACC_ELEM_BITS-1:0] acc_rdata_i,
  output logic                  gemm_uop_o,
  output logic                  alu_uop_o,
  output logic [1:0]            acc_wr_o,     // GEMM / ALU uops that wrote acc in this cycle
  output logic                  err_o,
  output logic [7:0]            err_field_o,
  output logic [31:0]           err_value_o,
  output logic [31:0]           err_limit_o,
  output logic [31:0]           err_index_o,
  output logic [1:0]            state_o,
  output logic [31:0]           index_o,
  output logic                  retire_o
);
  localparam int unsigned AccLanes = ACC_ELEM_BYTES / 8;
  localparam int unsigned UopW = LOG_UOP_BUFF_DEPTH + 1;
  localparam int unsigned RobDepth = 32;
  localparam int unsigned RobW = $clog2(RobDepth);

  // ------------------------------------------------------------------ the queue head
  logic [INSN_BITS-1:0] head;
  logic [31:0] head_index;
  assign head       = q_data_i[INSN_BITS-1:0];
  assign head_index = q_data_i[INSN_BITS +: 32];

  logic [2:0]  h_op, h_mtype;
  logic        h_gemm, h_alu, h_load, h_uop_load, h_acc8, h_empty, h_exec, h_tensor;
  logic [UopW-2:0] h_ubgn;
  logic [UopW-1:0] h_uend;
  logic [13:0] h_io, h_ii;
  logic [1:0]  h_pops, h_pushes;
  assign h_op       = head[INSN_OPCODE_LO +: 3];
  assign h_mtype    = head[MEM_MEMORY_TYPE_LO +: 3];
  assign h_gemm     = (32'(h_op) == OPCODE_GEMM);
  assign h_alu      = (32'(h_op) == OPCODE_ALU);
  assign h_load     = (32'(h_op) == OPCODE_LOAD);
  assign h_uop_load = h_load && (32'(h_mtype) == MEM_UOP);
  assign h_acc8     = (32'(h_mtype) == MEM_ACC_8BIT);
  assign h_ubgn     = head[GEMM_UOP_BGN_LO +: GEMM_UOP_BGN_W];
  assign h_uend     = head[GEMM_UOP_END_LO +: GEMM_UOP_END_W];
  assign h_io       = head[GEMM_ITER_OUT_LO +: GEMM_ITER_OUT_W];
  assign h_ii       = head[GEMM_ITER_IN_LO +: GEMM_ITER_IN_W];
  assign h_tensor   = h_alu && !head[ALU_USE_IMM_LO];
  assign h_empty    = (h_io == '0) || (h_ii == '0) || (h_uend <= UopW'(h_ubgn));
  // executed: a GEMM / ALU with a loop, a LOAD with data; everything else is a one-cycle no-op
  assign h_exec     = ((h_gemm || h_alu) && !h_empty) || (h_load && head[MEM_X_SIZE_LO +: 16] != '0);
  assign h_pops     = {head[INSN_POP_NEXT_DEP_LO], head[INSN_POP_PREV_DEP_LO]};
  assign h_pushes   = {head[INSN_PUSH_NEXT_DEP_LO], head[INSN_PUSH_PREV_DEP_LO]};

  // ------------------------------------------------------------------ footprints
  typedef struct packed {
    logic        d_v;
    logic [31:0] d_lo, d_hi;
    logic        s_v;
    logic [31:0] s_lo, s_hi;
    logic        u_v, u_w;
    logic [31:0] u_lo, u_hi;
  } foot_t;

  function automatic logic meets(input logic [31:0] alo, input logic [31:0] ahi,
                                 input logic [31:0] blo, input logic [31:0] bhi);
    return (alo <= bhi) && (blo <= ahi);
  endfunction

  function automatic logic conflict(input foot_t a, input foot_t b);
    return (a.d_v && b.d_v && meets(a.d_lo, a.d_hi, b.d_lo, b.d_hi))
        || (a.d_v && b.s_v && meets(a.d_lo, a.d_hi, b.s_lo, b.s_hi))
        || (a.s_v && b.d_v && meets(a.s_lo, a.s_hi, b.d_lo, b.d_hi))
        || (a.u_v && b.u_v && (a.u_w || b.u_w) && meets(a.u_lo, a.u_hi, b.u_lo, b.u_hi));
  endfunction

  // the padded rectangle of a LOAD: rows * width elements from sram_base
  logic [31:0] h_area, h_base;
  always_comb begin
    h_area = '0;
    if (h_load) begin
      h_area = (32'(head[MEM_Y_PAD_0_LO +: 4]) + 32'(head[MEM_Y_SIZE_LO +: 16]) + 32'(head[MEM_Y_PAD_1_LO +: 4]))
             * (32'(head[MEM_X_PAD_0_LO +: 4]) + 32'(head[MEM_X_SIZE_LO +: 16]) + 32'(head[MEM_X_PAD_1_LO +: 4]));
    end
  end
  assign h_base = 32'(head[MEM_SRAM_BASE_LO +: 16]);

  // the footprint scanner (GEMM / ALU heads)
  typedef enum logic [1:0] {ScIdle, ScRun, ScDone} sc_state_e;
  sc_state_e   sc_state_q, sc_state_d;
  logic [UopW-1:0] sc_u_q, sc_u_d;
  logic        sc_rd_q, sc_two_q;      // a pair read last cycle; its second entry is in range
  logic        sc_first_q;             // no entry seen yet
  logic [31:0] sc_dlo_q, sc_dhi_q, sc_slo_q, sc_shi_q;
  logic        h_needs_scan, sc_block, sc_start, sc_read, take;
  logic [UopW-1:0] sc_next;

  assign h_needs_scan = q_valid_i && (h_gemm || h_alu) && !h_empty;
  assign sc_start     = h_needs_scan && (sc_state_q == ScIdle) && !sc_block;
  assign sc_read      = sc_start || (sc_state_q == ScRun && !(sc_u_q >= h_uend));
  assign sc_next      = (sc_start ? UopW'(h_ubgn) : sc_u_q);

  // uop port 2: entries sc_next (bank sc_next[0]) and sc_next + 1 (the other bank)
  logic [UopW-1:0] sc_next1;
  assign sc_next1 = sc_next + UopW'(1);
  assign uop_re_o[2] = sc_read;
  always_comb begin
    uop_raddr_o[2][sc_next[0]]  = sc_next[LOG_UOP_BUFF_DEPTH-1:1];
    uop_raddr_o[2][sc_next1[0]] = sc_next1[LOG_UOP_BUFF_DEPTH-1:1];
  end
  logic [31:0] sc_e0, sc_e1;   // the pair read last cycle, in index order
  logic        sc_lo_bank_q;   // bank of its first entry
  assign sc_e0 = uop_rdata_i[2][sc_lo_bank_q];
  assign sc_e1 = uop_rdata_i[2][!sc_lo_bank_q];

  logic [31:0] e0_d, e0_s, e1_d, e1_s, mn_d, mx_d, mn_s, mx_s;
  always_comb begin
    e0_d = 32'(sc_e0[UOP_DST_IDX_LO +: UOP_DST_IDX_W]);
    e0_s = 32'(sc_e0[UOP_SRC_IDX_LO +: UOP_SRC_IDX_W]);
    e1_d = 32'(sc_e1[UOP_DST_IDX_LO +: UOP_DST_IDX_W]);
    e1_s = 32'(sc_e1[UOP_SRC_IDX_LO +: UOP_SRC_IDX_W]);
    mn_d = sc_first_q ? e0_d : ((e0_d < sc_dlo_q) ? e0_d : sc_dlo_q);
    mx_d = sc_first_q ? e0_d : ((e0_d > sc_dhi_q) ? e0_d : sc_dhi_q);
    mn_s = sc_first_q ? e0_s : ((e0_s < sc_slo_q) ? e0_s : sc_slo_q);
    mx_s = sc_first_q ? e0_s : ((e0_s > sc_shi_q) ? e0_s : sc_shi_q);
    if (sc_two_q) begin
      if (e1_d < mn_d) mn_d = e1_d;
      if (e1_d > mx_d) mx_d = e1_d;
      if (e1_s < mn_s) mn_s = e1_s;
      if (e1_s > mx_s) mx_s = e1_s;
    end
  end

  always_comb begin
    sc_state_d = sc_state_q;
    sc_u_d     = sc_u_q;
    if (take) begin
      sc_state_d = ScIdle;
    end else if (sc_start || sc_state_q == ScRun) begin
      sc_state_d = ScRun;
      if (sc_read) sc_u_d = sc_next + UopW'(2);
      else sc_state_d = ScDone;   // the last pair arrives now; its min / max are kept at the edge
    end
  end

  // the head's footprint
  foot_t h_foot;
  logic [31:0] h_doff, h_soff;
  assign h_doff = 32'(h_io - 14'd1) * 32'(head[GEMM_DST_FACTOR_OUT_LO +: GEMM_DST_FACTOR_OUT_W])
                + 32'(h_ii - 14'd1) * 32'(head[GEMM_DST_FACTOR_IN_LO +: GEMM_DST_FACTOR_IN_W]);
  assign h_soff = 32'(h_io - 14'd1) * 32'(head[ALU_SRC_FACTOR_OUT_LO +: ALU_SRC_FACTOR_OUT_W])
                + 32'(h_ii - 14'd1) * 32'(head[ALU_SRC_FACTOR_IN_LO +: ALU_SRC_FACTOR_IN_W]);
  always_comb begin
    h_foot = '0;
    if (h_exec && (h_gemm || h_alu)) begin
      h_foot.d_v  = 1'b1;
      h_foot.d_lo = sc_dlo_q;
      h_foot.d_hi = sc_dhi_q + h_doff;
      h_foot.s_v  = h_tensor;
      h_foot.s_lo = sc_slo_q;
      h_foot.s_hi = sc_shi_q + h_soff;
      h_foot.u_v  = 1'b1;
      h_foot.u_lo = 32'(h_ubgn);
      h_foot.u_hi = 32'(h_uend) - 32'd1;
    end else if (h_exec && h_uop_load) begin
      h_foot.u_v  = 1'b1;
      h_foot.u_w  = 1'b1;
      h_foot.u_lo = h_base;
      h_foot.u_hi = h_base + h_area - 32'd1;
    end else if (h_exec && h_load) begin
      h_foot.d_v  = 1'b1;
      h_foot.d_lo = h_base;
      h_foot.d_hi = h_base + h_area - 32'd1;
    end
  end

  // ------------------------------------------------------------------ lanes and the take
  logic        g_busy, g_done, g_err, m_alu_busy, m_alu_done, m_alu_err;
  logic [7:0]  g_field, m_field;
  logic [31:0] g_value, m_value, g_limit, m_limit;
  logic        g_start, m_alu_start, m_ld_q, m_ld_start;
  foot_t       g_foot_q, m_foot_q;
  logic [RobW-1:0] g_slot_q, m_slot_q;
  logic [31:0] g_index_q, m_index_q;
  logic        halted_q, dma_busy, ld_err, ld_done;
  logic [47:0] area_end;
  logic [RobW:0] rob_count_q;
  logic        g_inflight, m_inflight, h_lane_g, lane_free, hazard, pop_ok, rob_full;

  assign h_lane_g   = h_gemm && h_exec;
  assign g_inflight = g_busy;
  assign m_inflight = m_alu_busy || m_ld_q;
  assign lane_free  = h_lane_g ? !g_inflight : !m_inflight;
  assign hazard     = h_lane_g ? (m_inflight && conflict(h_foot, m_foot_q))
                               : (g_inflight && conflict(h_foot, g_foot_q));
  assign pop_ok     = (h_pops & ~{s2g_avail_i, l2g_avail_i}) == '0;
  assign rob_full   = rob_count_q == (RobW + 1)'(RobDepth);
  // a LOAD UOP in flight into the scanned range holds the scanner back
  assign sc_block   = m_ld_q && m_foot_q.u_w && meets(m_foot_q.u_lo, m_foot_q.u_hi, 32'(h_ubgn), 32'(h_uend) - 32'd1);

  logic scan_ok;
  assign scan_ok = !h_needs_scan || sc_state_q == ScDone;
  assign take    = q_valid_i && !halt_i && !halted_q && pop_ok && lane_free && !rob_full && scan_ok && !hazard;
  assign q_ready_o   = take && !ld_err;
  assign g_start     = take && h_lane_g;
  assign m_alu_start = take && h_alu && h_exec;
  assign m_ld_start  = take && h_load && h_exec && !ld_err;
  assign l2g_pop_o   = take && h_pops[0];
  assign s2g_pop_o   = take && h_pops[1];

  // LOAD UOP / ACC / ACC_8BIT on lane M: the read engine
  logic [INSN_BITS-1:0] m_insn_q, ld_insn;
  logic        ld_uop, ld_acc8;
  logic [4:0]  elem_log;
  logic        dreq_valid, wr_valid, wr_pad;
  logic [31:0] wr_idx, wr_idx_hi;
  logic [15:0] wr_sub;
  logic [1:0]  wr_half;
  logic [63:0] wr_data;
  assign ld_insn  = (take && h_load) ? head : m_insn_q;
  assign ld_uop   = (32'(ld_insn[MEM_MEMORY_TYPE_LO +: 3]) == MEM_UOP);
  assign ld_acc8  = (32'(ld_insn[MEM_MEMORY_TYPE_LO +: 3]) == MEM_ACC_8BIT);
  assign elem_log = ld_uop ? 5'd2 : (ld_acc8 ? 5'($clog2(ACC_8BIT_ELEM_BYTES)) : 5'($clog2(ACC_ELEM_BYTES)));

  vta_dma_rd u_dma (
    .clk_i,
    .rst_ni,
    .start_i     (m_ld_start),
    .insn_i      (ld_insn),
    .elem_log_i  (elem_log),
    .check_i     (take && h_load && h_exec),
    .sram_end_o  (area_end),
    .busy_o      (dma_busy),
    .req_valid_o (dreq_valid),
    .req_ready_i (ld_uop ? req_ready_i[0] : req_ready_i[1]),
    .req_addr_o,
    .req_len_o,
    .rsp_valid_i (|rsp_valid_i),
    .rsp_data_i,
    .wr_valid_o  (wr_valid),
    .wr_pad_o    (wr_pad),
    .wr_idx_o    (wr_idx),
    .wr_sub_o    (wr_sub),
    .wr_half_o   (wr_half),
    .wr_data_o   (wr_data)
  );
  assign req_valid_o = {dreq_valid && !ld_uop, dreq_valid && ld_uop};
  assign ld_err  = take && h_load && h_exec
                && (area_end > 48'(h_uop_load ? 32'(UOP_BUFF_DEPTH) : 32'(ACC_BUFF_DEPTH)));
  assign ld_done = m_ld_q && !dma_busy;

  assign wr_idx_hi = wr_idx + 32'd1;
  always_comb begin
    uop_we_o    = '0;
    uop_waddr_o = '0;
    uop_wdata_o = '0;
    if (m_ld_q && ld_uop && wr_valid) begin
      uop_we_o[wr_idx[0]]     = wr_half[0];
      uop_waddr_o[wr_idx[0]]  = wr_idx[LOG_UOP_BUFF_DEPTH-1:1];
      uop_wdata_o[wr_idx[0]]  = wr_data[31:0];
      uop_we_o[!wr_idx[0]]    = wr_half[1];
      uop_waddr_o[!wr_idx[0]] = wr_idx_hi[LOG_UOP_BUFF_DEPTH-1:1];
      uop_wdata_o[!wr_idx[0]] = wr_data[63:32];
    end
  end

  // lanes
  logic [1:0][LOG_UOP_BUFF_DEPTH-2:0] g_uaddr, m_uaddr;
  logic [LOG_UOP_BUFF_DEPTH-2:0] g_ua, m_ua;
  logic [1:0] g_acc_re, m_acc_re;
  logic [1:0][LOG_ACC_BUFF_DEPTH-1:0] g_acc_ra, m_acc_ra;
  logic        g_we, m_alu_we, g_wr, m_wr, g_real, m_real;
  logic [LOG_ACC_BUFF_DEPTH-1:0] g_wa, m_wa;
  logic [ACC_ELEM_BITS-1:0] g_wd, m_wd;
  logic        m_inp_re, m_wgt_re;
  logic [LOG_INP_BUFF_DEPTH-1:0] m_inp_ra;
  logic [LOG_WGT_BUFF_DEPTH-1:0] m_wgt_ra;

  vta_compute_lane #(.IsGemm(1'b1)) u_lane_g (
    .clk_i, .rst_ni, .halt_i (halt_i || halted_q),
    .start_i (g_start), .insn_i (head),
    .busy_o (g_busy), .done_o (g_done), .err_o (g_err),
    .err_field_o (g_field), .err_value_o (g_value), .err_limit_o (g_limit),
    .uop_re_o (uop_re_o[0]), .uop_raddr_o (g_ua), .uop_rdata_i (uop_rdata_i[0]),
    .inp_re_o, .inp_raddr_o, .inp_rdata_i,
    .wgt_re_o, .wgt_raddr_o, .wgt_rdata_i,
    .acc_re_o (g_acc_re), .acc_raddr_o (g_acc_ra), .acc_rdata_i ({acc_rdata_i[0], acc_rdata_i[0]}),
    .acc_we_o (g_we), .acc_waddr_o (g_wa), .acc_wdata_o (g_wd),
    .uop_done_o (g_wr), .real_uop_o (g_real)
  );
  vta_compute_lane #(.IsGemm(1'b0)) u_lane_m (
    .clk_i, .rst_ni, .halt_i (halt_i || halted_q),
    .start_i (m_alu_start), .insn_i (head),
    .busy_o (m_alu_busy), .done_o (m_alu_done), .err_o (m_alu_err),
    .err_field_o (m_field), .err_value_o (m_value), .err_limit_o (m_limit),
    .uop_re_o (uop_re_o[1]), .uop_raddr_o (m_ua), .uop_rdata_i (uop_rdata_i[1]),
    .inp_re_o (m_inp_re), .inp_raddr_o (m_inp_ra), .inp_rdata_i ('0),
    .wgt_re_o (m_wgt_re), .wgt_raddr_o (m_wgt_ra), .wgt_rdata_i ('0),
    .acc_re_o (m_acc_re), .acc_raddr_o (m_acc_ra), .acc_rdata_i (acc_rdata_i[2:1]),
    .acc_we_o (m_alu_we), .acc_waddr_o (m_wa), .acc_wdata_o (m_wd),
    .uop_done_o (m_wr), .real_uop_o (m_real)
  );
  assign g_uaddr = {g_ua, g_ua};
  assign m_uaddr = {m_ua, m_ua};
  assign uop_raddr_o[0] = g_uaddr;
  assign uop_raddr_o[1] = m_uaddr;
  assign acc_re_o       = {m_acc_re[1], m_acc_re[0], g_acc_re[0]};
  assign acc_raddr_o[0] = g_acc_ra[0];
  assign acc_raddr_o[1] = m_acc_ra[0];
  assign acc_raddr_o[2] = m_acc_ra[1];

  // acc writes: port 0 the GEMM lane; port 1 the ALU lane or a LOAD's beats and pads
  localparam int unsigned Acc8Lanes = ACC_WIDTH / 8;
  logic [8*ACC_WIDTH-1:0] acc8_beat;
  for (genvar e = 0; e < 8; e++) begin : g_acc8
    assign acc8_beat[e*ACC_WIDTH +: ACC_WIDTH] = ACC_WIDTH'($signed(wr_data[e*8 +: 8]));
  end
  always_comb begin
    acc_we_o[0]    = g_we;
    acc_wmask_o[0] = '1;
    acc_waddr_o[0] = g_wa;
    acc_wdata_o[0] = g_wd;
    acc_we_o[1]    = m_alu_we;
    acc_wmask_o[1] = '1;
    acc_waddr_o[1] = m_wa;
    acc_wdata_o[1] = m_wd;
    if (m_ld_q && !ld_uop) begin
      acc_we_o[1]    = wr_valid;
      acc_waddr_o[1] = wr_idx[LOG_ACC_BUFF_DEPTH-1:0];
      if (wr_pad) begin
        acc_wdata_o[1] = '0;
      end else if (ld_acc8) begin
        acc_wdata_o[1] = {(ACC_ELEM_BITS / (8 * ACC_WIDTH)){acc8_beat}};
        acc_wmask_o[1] = AccLanes'((1 << Acc8Lanes) - 1) << (32'(wr_sub) * Acc8Lanes);
      end else begin
        acc_wdata_o[1] = {AccLanes{wr_data}};
        acc_wmask_o[1] = AccLanes'(1) << wr_sub;
      end
    end
  end
  assign gemm_uop_o = g_real;
  assign alu_uop_o  = m_wr;
  assign acc_wr_o   = {m_wr, g_wr};

  // ------------------------------------------------------------------ retirement in program order
  logic [RobDepth-1:0]      rob_done_q;
  logic [RobDepth-1:0][1:0] rob_push_q;
  logic [RobDepth-1:0]      rob_fin_q;
  logic [RobDepth-1:0][31:0] rob_index_q;
  logic [RobW-1:0] rob_head_q, rob_tail_q;
  logic        h_done_now, retire, alloc, rob_empty;
  logic [RobDepth-1:0] done_set;
  logic [1:0]  ret_push;
  logic        ret_fin;
  logic        fail;

  assign rob_empty = (rob_count_q == '0);
  assign alloc     = take && !ld_err;
  // taken now and done at once: a no-op
  assign h_done_now = !h_exec;
  always_comb begin
    done_set = rob_done_q;
    if (g_done) done_set[g_slot_q] = 1'b1;
    if (m_alu_done || ld_done) done_set[m_slot_q] = 1'b1;
  end
  // the oldest instruction retires: the ROB head, or, with the ROB empty, a no-op taken now
  always_comb begin
    retire   = 1'b0;
    ret_push = '0;
    ret_fin  = 1'b0;
    if (!rob_empty) begin
      retire   = done_set[rob_head_q];
      ret_push = rob_push_q[rob_head_q];
      ret_fin  = rob_fin_q[rob_head_q];
    end else if (alloc && h_done_now) begin
      retire   = 1'b1;
      ret_push = h_pushes;
      ret_fin  = (32'(h_op) == OPCODE_FINISH);
    end
  end
  assign retire_o   = retire && !fail;
  assign g2l_push_o = retire_o && ret_push[0];
  assign g2s_push_o = retire_o && ret_push[1];
  assign finish_o   = retire_o && ret_fin;

  logic enq;
  assign enq = alloc && !(rob_empty && h_done_now);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rob_done_q  <= '0;
      rob_push_q  <= '0;
      rob_fin_q   <= '0;
      rob_index_q <= '0;
      rob_head_q  <= '0;
      rob_tail_q  <= '0;
      rob_count_q <= '0;
    end else begin
      rob_done_q <= done_set;
      if (enq) begin
        rob_done_q[rob_tail_q]  <= h_done_now;
        rob_push_q[rob_tail_q]  <= h_pushes;
        rob_fin_q[rob_tail_q]   <= (32'(h_op) == OPCODE_FINISH);
        rob_index_q[rob_tail_q] <= head_index;
        rob_tail_q              <= rob_tail_q + RobW'(1);
      end
      if (retire_o && !rob_empty) rob_head_q <= rob_head_q + RobW'(1);
      rob_count_q <= rob_count_q + (RobW + 1)'(enq) - (RobW + 1)'(retire_o && !rob_empty);
    end
  end

  // ------------------------------------------------------------------ errors and status
  assign fail = ld_err || g_err || m_alu_err;
  assign err_o = fail && !halted_q;
  always_comb begin
    if (ld_err) begin
      err_field_o = 8'(FIELD_SRAM_END);
      err_value_o = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
      err_limit_o = h_uop_load ? UOP_BUFF_DEPTH : ACC_BUFF_DEPTH;
      err_index_o = head_index;
    end else if (g_err) begin
      err_field_o = g_field; err_value_o = g_value; err_limit_o = g_limit; err_index_o = g_index_q;
    end else begin
      err_field_o = m_field; err_value_o = m_value; err_limit_o = m_limit; err_index_o = m_index_q;
    end
  end

  always_comb begin
    if (halted_q) begin
      state_o = 2'(STATE_IDLE);
      index_o = head_index;
    end else if (!rob_empty) begin
      state_o = 2'(STATE_BUSY);
      index_o = rob_index_q[rob_head_q];
    end else begin
      state_o = !q_valid_i ? 2'(STATE_IDLE) : (!pop_ok ? 2'(STATE_WAIT_TOKEN) : 2'(STATE_BUSY));
      index_o = head_index;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      halted_q   <= 1'b0;
      m_ld_q     <= 1'b0;
      m_insn_q   <= '0;
      g_foot_q   <= '0;
      m_foot_q   <= '0;
      g_slot_q   <= '0;
      m_slot_q   <= '0;
      g_index_q  <= '0;
      m_index_q  <= '0;
      sc_state_q <= ScIdle;
      sc_u_q     <= '0;
      sc_rd_q    <= 1'b0;
      sc_two_q   <= 1'b0;
      sc_first_q <= 1'b1;
      sc_lo_bank_q <= 1'b0;
      sc_dlo_q <= '0; sc_dhi_q <= '0; sc_slo_q <= '0; sc_shi_q <= '0;
    end else begin
      if (err_o) halted_q <= 1'b1;
      if (ld_done) m_ld_q <= 1'b0;
      if (m_ld_start) begin
        m_ld_q   <= 1'b1;
        m_insn_q <= head;
      end
      if (g_start) begin
        g_foot_q  <= h_foot;
        g_slot_q  <= rob_tail_q;
        g_index_q <= head_index;
      end
      if (take && !h_lane_g && h_exec) begin
        m_foot_q  <= h_foot;
        m_slot_q  <= rob_tail_q;
        m_index_q <= head_index;
      end
      sc_state_q <= sc_state_d;
      sc_u_q     <= sc_u_d;
      sc_rd_q    <= sc_read && !take;
      sc_two_q   <= (sc_next1 < h_uend);
      sc_lo_bank_q <= sc_next[0];
      if (take) begin
        sc_first_q <= 1'b1;
      end else if (sc_rd_q) begin
        sc_first_q <= 1'b0;
        sc_dlo_q <= mn_d; sc_dhi_q <= mx_d; sc_slo_q <= mn_s; sc_shi_q <= mx_s;
      end
    end
  end

  logic unused;
  assign unused = ^{wr_idx_hi, m_inp_re, m_inp_ra, m_wgt_re, m_wgt_ra, g_acc_re[1], g_acc_ra[1], g_real,
                    h_acc8, h_alu, m_real, m_alu_we, sc_e0, sc_e1};
endmodule : vta_compute_ov
