// One lane of the compute unit with the option COMPUTE_OVERLAP (vta_compute_ov): runs one GEMM
// (IsGemm) or one ALU instruction at a time with the uop pipeline of vta_compute:
//   S0 uop index -> uop SRAM read (this lane's read port; checks uop index < UOP_BUFF_DEPTH)
//   S1 row indices -> inp / wgt reads (GEMM) and acc reads (dst; an ALU's src on port 1)
//   S2 GEMM core or ALU -> acc write (this lane's write port of the two-writer acc memory)
// start_i takes insn_i (the lane keeps a copy); the first uop issues in the next cycle. done_o is
// raised in the cycle the last uop leaves S1 without error (S2 writes it in the next cycle), so an
// instruction of n uops started in cycle T is done in T + n + 1, as in vta_compute. busy_o: from
// the cycle after start_i up to and including done_o (the lane takes no instruction then).
module vta_compute_lane import vta_pkg::*; #(
  parameter bit IsGemm = 1'b1
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  input  logic                  start_i,
  input  logic [INSN_BITS-1:0]  insn_i,
  output logic                  busy_o,
  output logic                  done_o,
  output logic                  err_o,
  output logic [7:0]            err_field_o,
  output logic [31:0]           err_value_o,
  output logic [31:0]           err_limit_o,
  // uop SRAM read: the pair of entries at uop_raddr_o (even in bank 0, odd in bank 1)
  output logic                  uop_re_o,
  output logic [LOG_UOP_BUFF_DEPTH-2:0] uop_raddr_o,
  input  logic [1:0][31:0]      uop_rdata_i,
  // inp and wgt reads (GEMM lane)
  output logic                  inp_re_o,
  output logic [LOG_INP_BUFF_DEPTH-1:0] inp_raddr_o,
  input  logic [INP_ELEM_BITS-1:0] inp_rdata_i,
  output logic                  wgt_re_o,
  output logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_raddr_o,
  input  logic [WGT_ELEM_BITS-1:0] wgt_rdata_i,
  // acc reads: port 0 dst, port 1 an ALU's src; the S2 write
  output logic [1:0]            acc_re_o,
  output logic [1:0][LOG_ACC_BUFF_DEPTH-1:0] acc_raddr_o,
  input  logic [1:0][ACC_ELEM_BITS-1:0] acc_rdata_i,
  output logic                  acc_we_o,
  output logic [LOG_ACC_BUFF_DEPTH-1:0] acc_waddr_o,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata_o,
  output logic                  uop_done_o,   // a uop wrote acc (S2)
  output logic                  real_uop_o    // ... and it was not a GEMM reset
);
  localparam int unsigned UopW = LOG_UOP_BUFF_DEPTH + 1;

  logic [INSN_BITS-1:0] insn_q, insn;
  assign insn = start_i ? insn_i : insn_q;

  logic [2:0]  alu_op;
  logic        reset_reg, use_imm, tensor_alu;
  logic [15:0] imm;
  logic [UopW-2:0] uop_bgn;
  logic [UopW-1:0] uop_end;
  logic [13:0] iter_out, iter_in;
  logic [31:0] f_dst_out, f_dst_in, f_src_out, f_src_in, f_wgt_out, f_wgt_in;
  assign reset_reg  = IsGemm && insn[GEMM_RESET_REG_LO];
  assign uop_bgn    = insn[GEMM_UOP_BGN_LO +: GEMM_UOP_BGN_W];
  assign uop_end    = insn[GEMM_UOP_END_LO +: GEMM_UOP_END_W];
  assign iter_out   = insn[GEMM_ITER_OUT_LO +: GEMM_ITER_OUT_W];
  assign iter_in    = insn[GEMM_ITER_IN_LO +: GEMM_ITER_IN_W];
  assign alu_op     = insn[ALU_ALU_OPCODE_LO +: 3];
  assign use_imm    = insn[ALU_USE_IMM_LO];
  assign imm        = insn[ALU_IMM_LO +: 16];
  assign tensor_alu = !IsGemm && !use_imm;
  assign f_dst_out  = 32'(insn[GEMM_DST_FACTOR_OUT_LO +: GEMM_DST_FACTOR_OUT_W]);
  assign f_dst_in   = 32'(insn[GEMM_DST_FACTOR_IN_LO +: GEMM_DST_FACTOR_IN_W]);
  assign f_src_out  = IsGemm ? 32'(insn[GEMM_SRC_FACTOR_OUT_LO +: GEMM_SRC_FACTOR_OUT_W])
                             : 32'(insn[ALU_SRC_FACTOR_OUT_LO +: ALU_SRC_FACTOR_OUT_W]);
  assign f_src_in   = IsGemm ? 32'(insn[GEMM_SRC_FACTOR_IN_LO +: GEMM_SRC_FACTOR_IN_W])
                             : 32'(insn[ALU_SRC_FACTOR_IN_LO +: ALU_SRC_FACTOR_IN_W]);
  assign f_wgt_out  = IsGemm ? 32'(insn[GEMM_WGT_FACTOR_OUT_LO +: GEMM_WGT_FACTOR_OUT_W]) : '0;
  assign f_wgt_in   = IsGemm ? 32'(insn[GEMM_WGT_FACTOR_IN_LO +: GEMM_WGT_FACTOR_IN_W]) : '0;

  // ------------------------------------------------------------------ uop index generator (S0)
  logic            gen_active_q, gen_active_d;
  logic [UopW-1:0] u_q, u_d;
  logic [13:0]     i_out_q, i_out_d, i_in_q, i_in_d;
  logic [31:0]     od_q, od_d, os_q, os_d, ow_q, ow_d;
  logic [31:0]     id_q, id_d, is_q, is_d, iw_q, iw_d;
  logic            issue, s0_err;
  assign s0_err = gen_active_q && (32'(u_q) >= UOP_BUFF_DEPTH);

  logic            s1_valid_q, s1_sel_q;
  logic [31:0]     s1_od_q, s1_os_q, s1_ow_q;
  logic            s2_valid_q, s2_reset_q, s2_use_imm_q;
  logic [2:0]      s2_op_q;
  logic [15:0]     s2_imm_q;
  logic [LOG_ACC_BUFF_DEPTH-1:0] s2_dst_q;

  logic [31:0] uop, d_idx, s_idx, w_idx;
  logic        s1_err;
  assign uop   = s1_sel_q ? uop_rdata_i[1] : uop_rdata_i[0];
  assign d_idx = 32'(uop[UOP_DST_IDX_LO +: UOP_DST_IDX_W]) + s1_od_q;
  assign s_idx = 32'(uop[UOP_SRC_IDX_LO +: UOP_SRC_IDX_W]) + s1_os_q;
  assign w_idx = 32'(uop[UOP_WGT_IDX_LO +: UOP_WGT_IDX_W]) + s1_ow_q;

  always_comb begin
    s1_err      = 1'b0;
    err_field_o = 8'(FIELD_UOP_INDEX);
    err_value_o = 32'(u_q);
    err_limit_o = UOP_BUFF_DEPTH;
    if (s1_valid_q) begin
      if (d_idx >= ACC_BUFF_DEPTH) begin
        s1_err = 1'b1; err_field_o = 8'(FIELD_ACC_INDEX); err_value_o = d_idx; err_limit_o = ACC_BUFF_DEPTH;
      end else if (IsGemm && !reset_reg && s_idx >= INP_BUFF_DEPTH) begin
        s1_err = 1'b1; err_field_o = 8'(FIELD_INP_INDEX); err_value_o = s_idx; err_limit_o = INP_BUFF_DEPTH;
      end else if (IsGemm && !reset_reg && w_idx >= WGT_BUFF_DEPTH) begin
        s1_err = 1'b1; err_field_o = 8'(FIELD_WGT_INDEX); err_value_o = w_idx; err_limit_o = WGT_BUFF_DEPTH;
      end else if (tensor_alu && s_idx >= ACC_BUFF_DEPTH) begin
        s1_err = 1'b1; err_field_o = 8'(FIELD_ACC_INDEX); err_value_o = s_idx; err_limit_o = ACC_BUFF_DEPTH;
      end
    end
  end

  assign issue  = gen_active_q && !s0_err && !s1_err && !halt_i;
  assign err_o  = s0_err || s1_err;
  assign done_o = !gen_active_q && s1_valid_q && !s1_err && !halt_i;
  assign busy_o = gen_active_q || s1_valid_q;

  always_comb begin
    gen_active_d = gen_active_q;
    u_d = u_q; i_out_d = i_out_q; i_in_d = i_in_q;
    od_d = od_q; os_d = os_q; ow_d = ow_q;
    id_d = id_q; is_d = is_q; iw_d = iw_q;
    if (start_i) begin
      gen_active_d = 1'b1;
      u_d = UopW'(uop_bgn); i_out_d = '0; i_in_d = '0;
      od_d = '0; os_d = '0; ow_d = '0; id_d = '0; is_d = '0; iw_d = '0;
    end else if (s0_err || s1_err) begin
      gen_active_d = 1'b0;
    end else if (issue) begin
      if (u_q == uop_end - UopW'(1)) begin
        u_d = UopW'(uop_bgn);
        if (i_in_q == iter_in - 14'd1) begin
          i_in_d = '0; id_d = '0; is_d = '0; iw_d = '0;
          if (i_out_q == iter_out - 14'd1) begin
            gen_active_d = 1'b0;
          end else begin
            i_out_d = i_out_q + 14'd1;
            od_d = od_q + f_dst_out; os_d = os_q + f_src_out; ow_d = ow_q + f_wgt_out;
          end
        end else begin
          i_in_d = i_in_q + 14'd1;
          id_d = id_q + f_dst_in; is_d = is_q + f_src_in; iw_d = iw_q + f_wgt_in;
        end
      end else begin
        u_d = u_q + UopW'(1);
      end
    end
  end

  assign uop_re_o    = issue;
  assign uop_raddr_o = u_q[LOG_UOP_BUFF_DEPTH-1:1];

  assign inp_re_o    = IsGemm && s1_valid_q && !s1_err;
  assign inp_raddr_o = s_idx[LOG_INP_BUFF_DEPTH-1:0];
  assign wgt_re_o    = IsGemm && s1_valid_q && !s1_err;
  assign wgt_raddr_o = w_idx[LOG_WGT_BUFF_DEPTH-1:0];
  assign acc_re_o       = {s1_valid_q && !s1_err && tensor_alu, s1_valid_q && !s1_err};
  assign acc_raddr_o[0] = d_idx[LOG_ACC_BUFF_DEPTH-1:0];
  assign acc_raddr_o[1] = s_idx[LOG_ACC_BUFF_DEPTH-1:0];

  // S2 datapath: this lane's unit only
  logic [ACC_ELEM_BITS-1:0] y;
  if (IsGemm) begin : g_gemm
    vta_gemm u_gemm (
      .en_i    (s2_valid_q),
      .reset_i (s2_reset_q),
      .inp_i   (inp_rdata_i),
      .wgt_i   (wgt_rdata_i),
      .acc_i   (acc_rdata_i[0]),
      .acc_o   (y)
    );
  end else begin : g_alu
    vta_alu u_alu (
      .en_i      (s2_valid_q),
      .op_i      (s2_op_q),
      .use_imm_i (s2_use_imm_q),
      .imm_i     (s2_imm_q),
      .a_i       (acc_rdata_i[0]),
      .b_i       (acc_rdata_i[1]),
      .y_o       (y)
    );
  end
  assign acc_we_o    = s2_valid_q;
  assign acc_waddr_o = s2_dst_q;
  assign acc_wdata_o = y;
  assign uop_done_o  = s2_valid_q;
  assign real_uop_o  = s2_valid_q && !s2_reset_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      insn_q       <= '0;
      gen_active_q <= 1'b0;
      u_q          <= '0;
      i_out_q      <= '0;
      i_in_q       <= '0;
      od_q <= '0; os_q <= '0; ow_q <= '0;
      id_q <= '0; is_q <= '0; iw_q <= '0;
      s1_valid_q   <= 1'b0;
      s1_sel_q     <= 1'b0;
      s1_od_q <= '0; s1_os_q <= '0; s1_ow_q <= '0;
      s2_valid_q   <= 1'b0;
      s2_dst_q     <= '0;
      s2_reset_q   <= 1'b0;
      s2_use_imm_q <= 1'b0;
      s2_op_q      <= '0;
      s2_imm_q     <= '0;
    end else begin
      if (start_i) insn_q <= insn_i;
      gen_active_q <= gen_active_d;
      u_q          <= u_d;
      i_out_q      <= i_out_d;
      i_in_q       <= i_in_d;
      od_q <= od_d; os_q <= os_d; ow_q <= ow_d;
      id_q <= id_d; is_q <= is_d; iw_q <= iw_d;
      s1_valid_q   <= issue;
      s1_sel_q     <= u_q[0];
      s1_od_q <= od_q + id_q; s1_os_q <= os_q + is_q; s1_ow_q <= ow_q + iw_q;
      s2_valid_q   <= s1_valid_q && !s1_err && !halt_i;
      s2_dst_q     <= d_idx[LOG_ACC_BUFF_DEPTH-1:0];
      if (s1_valid_q) begin
        s2_reset_q   <= reset_reg;
        s2_use_imm_q <= use_imm;
        s2_op_q      <= alu_op;
        s2_imm_q     <= imm;
      end
    end
  end

  logic unused;
  // (each lane uses only its own unit's operands)
  assign unused = ^{uop, f_wgt_out, f_wgt_in, insn, inp_rdata_i, wgt_rdata_i, acc_rdata_i, s2_use_imm_q, s2_op_q,
                    s2_imm_q, s2_reset_q};
endmodule : vta_compute_lane
