// Compute unit: executes, one at a time and in queue order, LOAD UOP / ACC / ACC_8BIT, GEMM,
// ALU and FINISH (ISA reference 4.2, 4.4-4.6, DESIGN.md semantics table).
// Tokens: pops l2g (pop_prev_dep) and s2g (pop_next_dep) before an instruction, pushes g2l
// (push_prev_dep) and g2s (push_next_dep) after it.
// GEMM / ALU pipeline, one uop issued per cycle (ALU with a tensor operand too):
//   S0 uop index -> uop SRAM read        (checks uop index < UOP_BUFF_DEPTH)
//   S1 row indices -> inp / wgt / acc reads (checks every index against its depth); a tensor
//      ALU reads its dst row on acc read port 0 and its src row on port 1
//   S2 GEMM core or ALU -> acc write
// The SRAMs are write-first on every read port, so the S1 reads of the next uop (dst and src)
// already see the S2 write of the previous one: sequential semantics without stalls. An empty
// loop (iter_out, iter_in or the uop range zero) does nothing. An out-of-range index raises
// ERR_SRAM_INDEX and stops the unit. A GEMM / ALU retires in the cycle its last uop leaves S1
// without error (every index is checked by then); that uop's S2 write happens in the next
// cycle, when the next instruction is taken, so S2 keeps its own copy of the operation.
module vta_compute import vta_pkg::*; (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  // instruction queue head
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  // tokens
  input  logic                  l2g_avail_i,
  input  logic                  s2g_avail_i,
  output logic                  l2g_pop_o,
  output logic                  s2g_pop_o,
  output logic                  g2l_push_o,
  output logic                  g2s_push_o,
  output logic                  finish_o,
  // read clients: 0 uop, 1 acc
  output logic [1:0]            req_valid_o,
  input  logic [1:0]            req_ready_i,
  output logic [31:0]           req_addr_o,
  output logic [7:0]            req_len_o,
  input  logic [1:0]            rsp_valid_i,
  input  logic [63:0]           rsp_data_i,
  // uop SRAM, two banks (even / odd uop index)
  output logic [1:0]            uop_we_o,
  output logic [1:0][LOG_UOP_BUFF_DEPTH-2:0] uop_waddr_o,
  output logic [1:0][31:0]      uop_wdata_o,
  output logic                  uop_re_o,
  output logic [LOG_UOP_BUFF_DEPTH-2:0] uop_raddr_o,
  input  logic [1:0][31:0]      uop_rdata_i,
  // inp and wgt SRAM reads
  output logic                  inp_re_o,
  output logic [LOG_INP_BUFF_DEPTH-1:0] inp_raddr_o,
  input  logic [INP_ELEM_BITS-1:0] inp_rdata_i,
  output logic                  wgt_re_o,
  output logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_raddr_o,
  input  logic [WGT_ELEM_BITS-1:0] wgt_rdata_i,
  // acc SRAM: one write port, read ports 0 (dst) and 1 (ALU src)
  output logic                  acc_we_o,
  output logic [ACC_ELEM_BYTES/8-1:0] acc_wmask_o,
  output logic [LOG_ACC_BUFF_DEPTH-1:0] acc_waddr_o,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata_o,
  output logic [1:0]            acc_re_o,
  output logic [1:0][LOG_ACC_BUFF_DEPTH-1:0] acc_raddr_o,
  input  logic [1:0][ACC_ELEM_BITS-1:0] acc_rdata_i,
  // event counters
  output logic                  gemm_uop_o,   // a non-reset GEMM uop wrote acc
  output logic                  alu_uop_o,    // an ALU uop wrote acc
  output logic                  acc_wr_o,     // a GEMM / ALU uop wrote acc (UCNT0)
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
  localparam int unsigned AccLanes = ACC_ELEM_BYTES / 8;
  localparam int unsigned UopW = LOG_UOP_BUFF_DEPTH + 1;

  logic [INSN_BITS-1:0] insn;
  logic [31:0]          insn_index;
  logic                 decode, exec, start, in_load, in_exec;

  // ------------------------------------------------------------------ instruction fields
  // Decoded from insn (the queue head in the cycle it is taken) only for that cycle's checks and
  // start; what an executing instruction needs is latched at start into the x_*_q registers
  // below (enabled registers), so a simulator does not re-decode the 128-bit instruction in
  // every cycle of a GEMM or ALU.
  logic [2:0]  opcode, mtype;
  logic        is_gemm, is_alu;
  logic [UopW-2:0] uop_bgn;
  logic [UopW-1:0] uop_end;
  logic [13:0] iter_out, iter_in;

  assign opcode    = insn[INSN_OPCODE_LO +: 3];
  assign mtype     = insn[MEM_MEMORY_TYPE_LO +: 3];
  assign is_gemm   = (32'(opcode) == OPCODE_GEMM);
  assign is_alu    = (32'(opcode) == OPCODE_ALU);
  assign uop_bgn   = insn[GEMM_UOP_BGN_LO +: GEMM_UOP_BGN_W];
  assign uop_end   = insn[GEMM_UOP_END_LO +: GEMM_UOP_END_W];
  assign iter_out  = insn[GEMM_ITER_OUT_LO +: GEMM_ITER_OUT_W];
  assign iter_in   = insn[GEMM_ITER_IN_LO +: GEMM_ITER_IN_W];

  // the executing instruction, latched at start
  logic            x_load_q, x_uop_q, x_acc8_q;          // LOAD, of uops, of ACC_8BIT
  logic            x_gemm_q, x_alu_q, x_reset_q, x_use_imm_q, x_tensor_q;
  logic [2:0]      x_alu_op_q;
  logic [15:0]     x_imm_q;
  logic [UopW-2:0] x_uop_bgn_q;
  logic [UopW-1:0] x_uop_last_q;                          // uop_end - 1
  logic [13:0]     x_out_last_q, x_in_last_q;             // iter_out - 1, iter_in - 1
  logic [31:0]     f_dst_out, f_dst_in, f_src_out, f_src_in, f_wgt_out, f_wgt_in;

  // LOAD fields
  logic [15:0] x_size;
  logic [4:0]  elem_log;
  logic [47:0] area_end;   // end of a LOAD's padded rectangle (in the decode cycle, else 0)
  logic [31:0] load_depth;
  logic        is_uop_load, is_acc8;
  assign x_size      = insn[MEM_X_SIZE_LO +: 16];
  assign is_uop_load = (32'(mtype) == MEM_UOP);
  assign is_acc8     = (32'(mtype) == MEM_ACC_8BIT);
  assign elem_log    = is_uop_load ? 5'd2
                     : (is_acc8 ? 5'($clog2(ACC_8BIT_ELEM_BYTES)) : 5'($clog2(ACC_ELEM_BYTES)));
  assign load_depth  = is_uop_load ? 32'(UOP_BUFF_DEPTH) : 32'(ACC_BUFF_DEPTH);

  // ------------------------------------------------------------------ uop index generator (S0)
  logic            gen_active_q, gen_start;
  logic [UopW-1:0] u_q;
  logic [13:0]     i_out_q, i_in_q;
  logic [31:0]     od_q, os_q, ow_q;   // outer-loop offsets
  logic [31:0]     id_q, is_q, iw_q;   // inner-loop offsets
  logic            issue, s0_err;
  logic            empty_loop;

  assign s0_err = gen_active_q && (32'(u_q) >= UOP_BUFF_DEPTH);

  // pipeline registers
  logic            s1_valid_q, s1_valid_d, s1_sel_q;
  logic [31:0]     s1_od_q, s1_os_q, s1_ow_q;
  logic            s2_valid_q, s2_valid_d;
  // the operation of the uop in S2 (the instruction may have retired)
  logic            s2_gemm_q, s2_reset_q, s2_alu_q, s2_use_imm_q;
  logic [2:0]      s2_op_q;
  logic [15:0]     s2_imm_q;
  logic [LOG_ACC_BUFF_DEPTH-1:0] s2_dst_q;

  // S1 decode
  logic [31:0] uop, d_idx, s_idx, w_idx;
  logic        s1_err;
  logic [7:0]  s1_err_field;
  logic [31:0] s1_err_value, s1_err_limit;
  assign uop   = s1_sel_q ? uop_rdata_i[1] : uop_rdata_i[0];
  assign d_idx = 32'(uop[UOP_DST_IDX_LO +: UOP_DST_IDX_W]) + s1_od_q;
  assign s_idx = 32'(uop[UOP_SRC_IDX_LO +: UOP_SRC_IDX_W]) + s1_os_q;
  assign w_idx = 32'(uop[UOP_WGT_IDX_LO +: UOP_WGT_IDX_W]) + s1_ow_q;

  always_comb begin
    s1_err       = 1'b0;
    s1_err_field = 8'(FIELD_NONE);
    s1_err_value = '0;
    s1_err_limit = '0;
    if (s1_valid_q) begin
      if (d_idx >= ACC_BUFF_DEPTH) begin
        s1_err = 1'b1; s1_err_field = 8'(FIELD_ACC_INDEX);
        s1_err_value = d_idx; s1_err_limit = ACC_BUFF_DEPTH;
      end else if (x_gemm_q && !x_reset_q && s_idx >= INP_BUFF_DEPTH) begin
        s1_err = 1'b1; s1_err_field = 8'(FIELD_INP_INDEX);
        s1_err_value = s_idx; s1_err_limit = INP_BUFF_DEPTH;
      end else if (x_gemm_q && !x_reset_q && w_idx >= WGT_BUFF_DEPTH) begin
        s1_err = 1'b1; s1_err_field = 8'(FIELD_WGT_INDEX);
        s1_err_value = w_idx; s1_err_limit = WGT_BUFF_DEPTH;
      end else if (x_tensor_q && s_idx >= ACC_BUFF_DEPTH) begin
        s1_err = 1'b1; s1_err_field = 8'(FIELD_ACC_INDEX);
        s1_err_value = s_idx; s1_err_limit = ACC_BUFF_DEPTH;
      end
    end
  end

  assign issue = gen_active_q && !s0_err && !s1_err && !halt_i;

  assign uop_re_o    = issue;
  assign uop_raddr_o = u_q[LOG_UOP_BUFF_DEPTH-1:1];

  assign s1_valid_d = issue;
  assign s2_valid_d = s1_valid_q && !s1_err && !halt_i;

  // S1 reads
  assign inp_re_o    = s1_valid_q && !s1_err && x_gemm_q;
  assign inp_raddr_o = s_idx[LOG_INP_BUFF_DEPTH-1:0];
  assign wgt_re_o    = s1_valid_q && !s1_err && x_gemm_q;
  assign wgt_raddr_o = w_idx[LOG_WGT_BUFF_DEPTH-1:0];

  // S2 datapath
  logic [ACC_ELEM_BITS-1:0] gemm_y, alu_y;
  vta_gemm u_gemm (
    .en_i    (s2_valid_q && s2_gemm_q),
    .reset_i (s2_reset_q),
    .inp_i   (inp_rdata_i),
    .wgt_i   (wgt_rdata_i),
    .acc_i   (acc_rdata_i[0]),
    .acc_o   (gemm_y)
  );
  vta_alu u_alu (
    .en_i      (s2_valid_q && s2_alu_q),
    .op_i      (s2_op_q),
    .use_imm_i (s2_use_imm_q),
    .imm_i     (s2_imm_q),
    .a_i       (acc_rdata_i[0]),
    .b_i       (acc_rdata_i[1]),
    .y_o       (alu_y)
  );

  // ------------------------------------------------------------------ LOAD UOP / ACC / ACC_8BIT
  logic        dma_start, dma_busy, dreq_valid;
  logic        wr_valid, wr_pad;
  logic [31:0] wr_idx, wr_idx_hi;
  logic [15:0] wr_sub;
  logic [1:0]  wr_half;
  logic [63:0] wr_data;

  logic [47:0] dma_end;
  vta_dma_rd u_dma (
    .clk_i,
    .rst_ni,
    .start_i        (dma_start),
    .insn_i         (insn),
    .elem_log_i     (elem_log),
    .check_i        (1'b0),
    .sram_end_o     (dma_end),  // unused: the area is checked in decode
    .busy_o         (dma_busy),
    .req_valid_o    (dreq_valid),
    .req_ready_i    (x_uop_q ? req_ready_i[0] : req_ready_i[1]),
    .req_addr_o     (req_addr_o),
    .req_len_o      (req_len_o),
    .rsp_valid_i    (|rsp_valid_i),
    .rsp_data_i     (rsp_data_i),
    .wr_valid_o     (wr_valid),
    .wr_pad_o       (wr_pad),
    .wr_idx_o       (wr_idx),
    .wr_sub_o       (wr_sub),
    .wr_half_o      (wr_half),
    .wr_data_o      (wr_data)
  );
  assign req_valid_o = {dreq_valid && !x_uop_q, dreq_valid && x_uop_q};

  // uop writes: the low half's element and the next one always sit in different banks.
  assign wr_idx_hi = wr_idx + 32'd1;
  always_comb begin
    uop_we_o    = '0;
    uop_waddr_o = '0;
    uop_wdata_o = '0;
    if (in_load && x_uop_q && wr_valid) begin
      uop_we_o[wr_idx[0]]     = wr_half[0];
      uop_waddr_o[wr_idx[0]]  = wr_idx[LOG_UOP_BUFF_DEPTH-1:1];
      uop_wdata_o[wr_idx[0]]  = wr_data[31:0];
      uop_we_o[!wr_idx[0]]    = wr_half[1];
      uop_waddr_o[!wr_idx[0]] = wr_idx_hi[LOG_UOP_BUFF_DEPTH-1:1];
      uop_wdata_o[!wr_idx[0]] = wr_data[63:32];
    end
  end

  // acc writes: loads (a beat at a time) or the S2 result
  localparam int unsigned Acc8Lanes = ACC_WIDTH / 8;  // 64-bit lanes filled by one ACC_8BIT beat
  logic [8*ACC_WIDTH-1:0] acc8_beat;
  for (genvar e = 0; e < 8; e++) begin : g_acc8
    assign acc8_beat[e*ACC_WIDTH +: ACC_WIDTH] = ACC_WIDTH'($signed(wr_data[e*8 +: 8]));
  end

  always_comb begin
    acc_we_o    = 1'b0;
    acc_wmask_o = '1;
    acc_waddr_o = s2_dst_q;
    acc_wdata_o = s2_alu_q ? alu_y : gemm_y;
    if (in_load) begin
      acc_we_o    = wr_valid && !x_uop_q;
      acc_waddr_o = wr_idx[LOG_ACC_BUFF_DEPTH-1:0];
      if (wr_pad) begin
        acc_wdata_o = '0;
        acc_wmask_o = '1;
      end else if (x_acc8_q) begin
        acc_wdata_o = {(ACC_ELEM_BITS / (8 * ACC_WIDTH)){acc8_beat}};
        acc_wmask_o = AccLanes'((1 << Acc8Lanes) - 1) << (32'(wr_sub) * Acc8Lanes);
      end else begin
        acc_wdata_o = {AccLanes{wr_data}};
        acc_wmask_o = AccLanes'(1) << wr_sub;
      end
    end else if (s2_valid_q) begin
      acc_we_o = 1'b1;
    end
  end

  assign acc_re_o       = {s1_valid_q && !s1_err && x_tensor_q, s1_valid_q && !s1_err};
  assign acc_raddr_o[0] = d_idx[LOG_ACC_BUFF_DEPTH-1:0];
  assign acc_raddr_o[1] = s_idx[LOG_ACC_BUFF_DEPTH-1:0];

  assign gemm_uop_o = s2_valid_q && s2_gemm_q && !s2_reset_q;
  assign alu_uop_o  = s2_valid_q && s2_alu_q;
  assign acc_wr_o   = s2_valid_q;

  // ------------------------------------------------------------------ control
  // Decode: a LOAD with x_size == 0, FINISH and an empty GEMM / ALU are done at once; a LOAD
  // beyond its buffer fails; a LOAD starts the read engine, a GEMM / ALU the uop generator.
  // A LOAD is done when the read engine is idle again, a GEMM / ALU when its last uop leaves S1
  // without error (S2 writes it in the next cycle); an out-of-range index in S0 or S1 fails it.
  logic       is_load, skip, done, ld_err, fail;
  logic [1:0] tok_pop, tok_push;
  logic [7:0] err_field_d;
  logic [31:0] err_value_d, err_limit_d;

  assign is_load = (32'(opcode) == OPCODE_LOAD);
  assign in_load = exec && x_load_q;
  assign in_exec = exec && !x_load_q;
  assign done    = (decode && skip)
                || (in_load && !dma_busy)
                || (in_exec && !gen_active_q && s1_valid_q && !s1_err && !halt_i);
  // the checks of the cycle the instruction is taken, evaluated only in that cycle (the padded
  // area is multiplied out here, not by the read engine, whose check output a simulator would
  // compute in every cycle)
  always_comb begin
    empty_loop = 1'b0;
    skip       = 1'b0;
    ld_err     = 1'b0;
    area_end   = '0;
    if (decode) begin
      area_end   = mem_padded_end(insn);
      empty_loop = (iter_out == '0) || (iter_in == '0) || (uop_end <= UopW'(uop_bgn));
      skip   = is_load ? (x_size == '0) : !((is_gemm || is_alu) && !empty_loop);
      ld_err = is_load && !skip && (area_end > 48'(load_depth));
    end
  end
  assign fail    = ld_err || (in_exec && (s0_err || s1_err));
  assign dma_start = start && is_load;
  assign gen_start = start && !is_load;

  vta_insn_seq #(.UsePrevDep(1'b1), .UseNextDep(1'b1)) u_seq (
    .clk_i,
    .rst_ni,
    .halt_i,
    .q_valid_i,
    .q_ready_o,
    .q_data_i,
    .tok_avail_i  ({s2g_avail_i, l2g_avail_i}),
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
  assign l2g_pop_o  = tok_pop[0];
  assign s2g_pop_o  = tok_pop[1];
  assign g2l_push_o = tok_push[0];
  assign g2s_push_o = tok_push[1];
  assign finish_o   = retire_o && (32'(opcode) == OPCODE_FINISH);

  always_comb begin
    if (ld_err) begin
      err_field_d = 8'(FIELD_SRAM_END);
      err_value_d = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
      err_limit_d = load_depth;
    end else if (s1_err) begin
      err_field_d = s1_err_field;
      err_value_d = s1_err_value;
      err_limit_d = s1_err_limit;
    end else begin
      err_field_d = 8'(FIELD_UOP_INDEX);
      err_value_d = 32'(u_q);
      err_limit_d = UOP_BUFF_DEPTH;
    end
  end
  assign err_field_o = err_field_d;
  assign err_value_o = err_value_d;
  assign err_limit_o = err_limit_d;
  assign err_index_o = insn_index;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
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
      s2_gemm_q    <= 1'b0;
      s2_reset_q   <= 1'b0;
      s2_alu_q     <= 1'b0;
      s2_use_imm_q <= 1'b0;
      s2_op_q      <= '0;
      s2_imm_q     <= '0;
    end else begin
      // The generator's next state, written under its conditions (start, error, issue) in this
      // process: a simulator copies no next-state values of the ten generator registers in the
      // cycles they keep their values.
      if (gen_start) begin
        gen_active_q <= 1'b1;
        u_q <= UopW'(uop_bgn); i_out_q <= '0; i_in_q <= '0;
        od_q <= '0; os_q <= '0; ow_q <= '0; id_q <= '0; is_q <= '0; iw_q <= '0;
      end else if (s0_err || s1_err) begin
        gen_active_q <= 1'b0;
      end else if (issue) begin
        if (u_q == x_uop_last_q) begin
          u_q <= UopW'(x_uop_bgn_q);
          if (i_in_q == x_in_last_q) begin
            i_in_q <= '0; id_q <= '0; is_q <= '0; iw_q <= '0;
            if (i_out_q == x_out_last_q) begin
              gen_active_q <= 1'b0;
            end else begin
              i_out_q <= i_out_q + 14'd1;
              od_q <= od_q + f_dst_out; os_q <= os_q + f_src_out; ow_q <= ow_q + f_wgt_out;
            end
          end else begin
            i_in_q <= i_in_q + 14'd1;
            id_q <= id_q + f_dst_in; is_q <= is_q + f_src_in; iw_q <= iw_q + f_wgt_in;
          end
        end else begin
          u_q <= u_q + UopW'(1);
        end
      end
      // S1's uop select and offsets are read only while s1_valid_q (loaded with it on an issue);
      // S2's destination only while s2_valid_q (loaded with it when S1 holds a uop).
      s1_valid_q <= s1_valid_d;
      if (issue) begin
        s1_sel_q <= u_q[0];
        s1_od_q  <= od_q + id_q; s1_os_q <= os_q + is_q; s1_ow_q <= ow_q + iw_q;
      end
      s2_valid_q <= s2_valid_d;
      if (s1_valid_q) begin
        s2_dst_q     <= d_idx[LOG_ACC_BUFF_DEPTH-1:0];
        s2_gemm_q    <= x_gemm_q;
        s2_reset_q   <= x_reset_q;
        s2_alu_q     <= x_alu_q;
        s2_use_imm_q <= x_use_imm_q;
        s2_op_q      <= x_alu_op_q;
        s2_imm_q     <= x_imm_q;
      end
    end
  end

  // The executing instruction's fields, latched when it starts (see "instruction fields").
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      x_load_q     <= 1'b0;
      x_uop_q      <= 1'b0;
      x_acc8_q     <= 1'b0;
      x_gemm_q     <= 1'b0;
      x_alu_q      <= 1'b0;
      x_reset_q    <= 1'b0;
      x_use_imm_q  <= 1'b0;
      x_tensor_q   <= 1'b0;
      x_alu_op_q   <= '0;
      x_imm_q      <= '0;
      x_uop_bgn_q  <= '0;
      x_uop_last_q <= '0;
      x_out_last_q <= '0;
      x_in_last_q  <= '0;
      f_dst_out <= '0; f_dst_in <= '0; f_src_out <= '0; f_src_in <= '0; f_wgt_out <= '0; f_wgt_in <= '0;
    end else if (start) begin
      x_load_q     <= is_load;
      x_uop_q      <= is_uop_load;
      x_acc8_q     <= is_acc8;
      x_gemm_q     <= is_gemm;
      x_alu_q      <= is_alu;
      x_reset_q    <= insn[GEMM_RESET_REG_LO] && is_gemm;
      x_use_imm_q  <= insn[ALU_USE_IMM_LO];
      x_tensor_q   <= is_alu && !insn[ALU_USE_IMM_LO];
      x_alu_op_q   <= insn[ALU_ALU_OPCODE_LO +: 3];
      x_imm_q      <= insn[ALU_IMM_LO +: 16];
      x_uop_bgn_q  <= uop_bgn;
      x_uop_last_q <= uop_end - UopW'(1);
      x_out_last_q <= iter_out - 14'd1;
      x_in_last_q  <= iter_in - 14'd1;
      f_dst_out    <= 32'(insn[GEMM_DST_FACTOR_OUT_LO +: GEMM_DST_FACTOR_OUT_W]);
      f_dst_in     <= 32'(insn[GEMM_DST_FACTOR_IN_LO +: GEMM_DST_FACTOR_IN_W]);
      f_src_out    <= is_alu ? 32'(insn[ALU_SRC_FACTOR_OUT_LO +: ALU_SRC_FACTOR_OUT_W])
                             : 32'(insn[GEMM_SRC_FACTOR_OUT_LO +: GEMM_SRC_FACTOR_OUT_W]);
      f_src_in     <= is_alu ? 32'(insn[ALU_SRC_FACTOR_IN_LO +: ALU_SRC_FACTOR_IN_W])
                             : 32'(insn[GEMM_SRC_FACTOR_IN_LO +: GEMM_SRC_FACTOR_IN_W]);
      f_wgt_out    <= 32'(insn[GEMM_WGT_FACTOR_OUT_LO +: GEMM_WGT_FACTOR_OUT_W]);
      f_wgt_in     <= 32'(insn[GEMM_WGT_FACTOR_IN_LO +: GEMM_WGT_FACTOR_IN_W]);
    end
  end

  logic unused;
  assign unused = ^{wr_idx_hi, uop[31:0], dma_end};

  // Checks: same-cycle implications over the values before the clock edge (what a concurrent
  // assertion samples), as immediate assertions on the clock edge that run only in an edge where
  // one of the checks fails (a simulator evaluates the checks once, together, and copies no
  // sampled values; see vta_insn_seq).
  logic issue_ok, load_write_ok, write_port_ok;
  assign issue_ok      = !issue || in_exec;
  assign load_write_ok = !wr_valid || in_load;
  assign write_port_ok = !s2_valid_q || !in_load;
  always_ff @(posedge clk_i) begin
    if (rst_ni && !(issue_ok && load_write_ok && write_port_ok)) begin
      IssueOnlyInExec: assert (issue_ok)
        else $error("vta_compute: uop issued outside GEMM / ALU");
      LoadWritesOnlyInLoad: assert (load_write_ok)
        else $error("vta_compute: load data outside a load");
      NoWriteConflict: assert (write_port_ok)
        else $error("vta_compute: acc write port conflict");
    end
  end
endmodule : vta_compute
