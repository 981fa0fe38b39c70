// Load unit: executes LOAD INP and LOAD WGT from its instruction queue, one at a time
// (ISA reference 4.2). Before an instruction it waits for a g2l token if pop_next_dep is set
// and takes it; after it, it pushes an l2g token if push_next_dep is set. x_size == 0 is a
// no-op that still obeys its tokens. A load whose padded rectangle does not fit its buffer
// raises ERR_SRAM_INDEX (FIELD_SRAM_END) and stops the unit.
module vta_load import vta_pkg::*; (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  // instruction queue head
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  // tokens
  input  logic                  tok_avail_i,   // g2l
  output logic                  tok_pop_o,     // g2l
  output logic                  tok_push_o,    // l2g
  // read clients: 0 inp, 1 wgt
  output logic [1:0]            req_valid_o,
  input  logic [1:0]            req_ready_i,
  output logic [31:0]           req_addr_o,
  output logic [7:0]            req_len_o,
  input  logic [1:0]            rsp_valid_i,
  input  logic [63:0]           rsp_data_i,
  // scratchpad writes
  output logic                  inp_we_o,
  output logic [INP_ELEM_BYTES/8-1:0] inp_wmask_o,
  output logic [LOG_INP_BUFF_DEPTH-1:0] inp_waddr_o,
  output logic [INP_ELEM_BITS-1:0] inp_wdata_o,
  output logic                  wgt_we_o,
  output logic [WGT_ELEM_BYTES/8-1:0] wgt_wmask_o,
  output logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_waddr_o,
  output logic [WGT_ELEM_BITS-1:0] wgt_wdata_o,
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
  localparam int unsigned InpLanes = INP_ELEM_BYTES / 8;
  localparam int unsigned WgtLanes = WGT_ELEM_BYTES / 8;

  logic [INSN_BITS-1:0] insn;
  logic [31:0]          insn_index;

  // ------------------------------------------------------------------ fields
  logic        is_wgt, x_zero;
  logic [4:0]  elem_log;
  logic [47:0] area_end;   // end of the padded rectangle (in the decode cycle, else 0)
  logic [31:0] depth;

  assign is_wgt    = (32'(insn[MEM_MEMORY_TYPE_LO +: 3]) == MEM_WGT);
  assign elem_log  = is_wgt ? 5'($clog2(WGT_ELEM_BYTES)) : 5'($clog2(INP_ELEM_BYTES));
  assign depth     = is_wgt ? 32'(WGT_BUFF_DEPTH) : 32'(INP_BUFF_DEPTH);

  // ------------------------------------------------------------------ control
  // Decode: x_size == 0 is done at once, a rectangle beyond the buffer fails, any other load
  // starts the transfer; it is done when the read engine is idle again.
  logic       decode, exec, done, fail, dma_start, dma_busy;
  logic [1:0] tok_pop, tok_push;
  assign done = (decode && x_zero) || (exec && !dma_busy);
  // the checks of the cycle the instruction is taken, evaluated only in that cycle (the padded
  // area is multiplied out here, not by the read engine, whose check output a simulator would
  // compute in every cycle)
  always_comb begin
    x_zero   = 1'b0;
    fail     = 1'b0;
    area_end = '0;
    if (decode) begin
      x_zero   = (insn[MEM_X_SIZE_LO +: 16] == '0);
      area_end = mem_padded_end(insn);
      fail     = !x_zero && (area_end > 48'(depth));
    end
  end

  vta_insn_seq #(.UsePrevDep(1'b0), .UseNextDep(1'b1)) u_seq (
    .clk_i,
    .rst_ni,
    .halt_i,
    .q_valid_i,
    .q_ready_o,
    .q_data_i,
    .tok_avail_i  ({tok_avail_i, 1'b0}),
    .tok_pop_o    (tok_pop),
    .tok_push_o   (tok_push),
    .insn_o       (insn),
    .insn_index_o (insn_index),
    .decode_o     (decode),
    .start_o      (dma_start),
    .exec_o       (exec),
    .done_i       (done),
    .err_i        (fail),
    .err_o,
    .state_o,
    .index_o,
    .retire_o
  );
  assign tok_pop_o  = tok_pop[1];
  assign tok_push_o = tok_push[1];

  assign err_field_o = 8'(FIELD_SRAM_END);
  assign err_value_o = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
  assign err_limit_o = depth;
  assign err_index_o = insn_index;

  // ------------------------------------------------------------------ transfer
  logic        dreq_valid;
  logic        wr_valid, wr_pad;
  logic [31:0] wr_idx;
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
    .req_ready_i    (wgt_q ? req_ready_i[1] : req_ready_i[0]),
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

  // The transfer's destination, latched when it starts (an enabled register): the read engine's
  // requests and writes, which it makes only while busy, are routed by it, not by the decode of
  // the instruction in every cycle.
  logic wgt_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni)        wgt_q <= 1'b0;
    else if (dma_start) wgt_q <= is_wgt;
  end

  assign req_valid_o = {dreq_valid && wgt_q, dreq_valid && !wgt_q};

  assign inp_we_o    = wr_valid && !wgt_q;
  assign inp_waddr_o = wr_idx[LOG_INP_BUFF_DEPTH-1:0];
  assign inp_wdata_o = {InpLanes{wr_data}};
  assign inp_wmask_o = wr_pad ? '1 : InpLanes'(1) << wr_sub;
  assign wgt_we_o    = wr_valid && wgt_q;
  assign wgt_waddr_o = wr_idx[LOG_WGT_BUFF_DEPTH-1:0];
  assign wgt_wdata_o = {WgtLanes{wr_data}};
  assign wgt_wmask_o = wr_pad ? '1 : WgtLanes'(1) << wr_sub;

  // the g2l / l2g channels only (the load has no previous stage); opcode and flags are the
  // sequencer's
  logic unused;
  assign unused = ^{wr_half, tok_pop[0], tok_push[0], insn, dma_end};

  // Checks: same-cycle implications over the values before the clock edge (what a concurrent
  // assertion samples), as immediate assertions on the clock edge that run only in an edge where
  // one of the checks fails (a simulator evaluates the checks once, together, and copies no
  // sampled values; see vta_insn_seq).
  // Both are about a decode or a scratchpad write, so they are computed only in an edge with
  // one of these, inside the clocked process (continuous assignments are computed every cycle).
  always_ff @(posedge clk_i) begin
    if (rst_ni && (decode || wr_valid)) begin
      automatic logic only_inp_wgt_ok, wr_in_range_ok;
      only_inp_wgt_ok = !decode || (32'(insn[MEM_MEMORY_TYPE_LO +: 3]) == MEM_INP || is_wgt);
      wr_in_range_ok  = !wr_valid || wr_idx < depth;
      if (!(only_inp_wgt_ok && wr_in_range_ok)) begin
        OnlyInpWgt: assert (only_inp_wgt_ok)
          else $error("vta_load: instruction of another unit in the load queue");
        WrInRange: assert (wr_in_range_ok)
          else $error("vta_load: scratchpad write out of range");
      end
    end
  end
endmodule : vta_load
