// VTA core: host registers, fetch, three instruction queues, the load / compute / store
// units, dependency tokens, watchdog, scratchpads and the memory engine.
//
//   host -> vta_vcr --launch--> vta_fetch --+--> load queue ----> vta_load ----> inp, wgt SRAM
//                                           +--> compute queue -> vta_compute -> uop, acc SRAM
//                                           +--> store queue ---> vta_store <--- acc SRAM
//   vta_tokens between the units; vta_mem_engine between the units and the memory channels.
module vta_top import vta_pkg::*; (
  input  logic        clk_i,
  input  logic        rst_ni,
  // Host register port: 32-bit registers at byte addresses 0x00..0xFC, one access per cycle.
  input  logic        host_req_i,
  input  logic        host_we_i,
  input  logic [7:0]  host_addr_i,
  input  logic [31:0] host_wdata_i,
  output logic        host_rvalid_o,   // the cycle after a read request
  output logic [31:0] host_rdata_o,
  // Memory read channel: 64-bit beats, bursts of up to 16 beats that never cross a 128-byte
  // boundary; byte addresses are 8-byte aligned; responses of different ids may interleave.
  output logic        mem_rd_req_valid_o,
  input  logic        mem_rd_req_ready_i,
  output logic [31:0] mem_rd_req_addr_o,
  output logic [7:0]  mem_rd_req_len_o,   // beats - 1
  output logic [7:0]  mem_rd_req_id_o,
  input  logic        mem_rd_valid_i,     // the core is always ready for read data
  input  logic [63:0] mem_rd_data_i,
  input  logic [7:0]  mem_rd_id_i,
  input  logic        mem_rd_last_i,
  // Memory write channel: one burst at a time; request, then len+1 beats, then an ack pulse.
  output logic        mem_wr_req_valid_o,
  input  logic        mem_wr_req_ready_i,
  output logic [31:0] mem_wr_req_addr_o,
  output logic [7:0]  mem_wr_req_len_o,
  output logic        mem_wr_valid_o,
  input  logic        mem_wr_ready_i,
  output logic [63:0] mem_wr_data_o,
  output logic [7:0]  mem_wr_strb_o,
  output logic        mem_wr_last_o,
  input  logic        mem_wr_ack_i
);
  localparam int unsigned QW = INSN_BITS + 32;          // queue entry: {index, instruction}
  localparam int unsigned FillW = $clog2(INSN_QUEUE_DEPTH + 1);

  // ------------------------------------------------------------------ run control
  logic        launch, running, halted, finish;
  logic [31:0] insn_addr, insn_count, wdog_limit;

  // ------------------------------------------------------------------ read clients
  // 0 fetch, 1 uop, 2 inp, 3 wgt, 4 acc
  logic [4:0]        cl_req_valid, cl_req_ready, cl_rsp_valid;
  logic [4:0][31:0]  cl_req_addr;
  logic [4:0][7:0]   cl_req_len;
  logic [63:0]       cl_rsp_data;
  logic              cl_rsp_last;
  logic [31:0]       ld_req_addr, co_req_addr;
  logic [7:0]        ld_req_len, co_req_len;
  logic              wc_req_valid, wc_req_ready, wc_valid, wc_ready, wc_last, wc_ack;
  logic [31:0]       wc_req_addr;
  logic [7:0]        wc_req_len;
  logic [63:0]       wc_data;
  logic              mem_beat;

  // ------------------------------------------------------------------ queues
  logic [2:0]        q_in_valid, q_in_ready, q_out_valid, q_out_ready;
  logic [QW-1:0]     q_in_data;
  logic [2:0][QW-1:0] q_out_data;
  logic [2:0][FillW-1:0] q_fill;
  logic [2:0][15:0]  fill16;

  // ------------------------------------------------------------------ tokens
  logic [3:0]        tok_push, tok_pop, tok_avail;
  logic [3:0][7:0]   tok_count;
  logic              tok_err;
  logic [1:0]        tok_err_chan;

  // ------------------------------------------------------------------ status and errors
  logic [3:0][1:0]   unit_state;
  logic [3:0][31:0]  unit_index;
  logic [3:0]        unit_retire;
  logic              fe_err, ld_err, co_err, st_err, wd_fire;
  logic [7:0]        fe_field, ld_field, co_field, st_field;
  logic [31:0]       fe_value, ld_value, co_value, st_value;
  logic [31:0]       ld_limit, co_limit, st_limit;
  logic [31:0]       fe_index, ld_index, co_index, st_index;
  logic              gemm_uop, alu_uop, dispatch;
  logic [1:0]        acc_wr;

  // ------------------------------------------------------------------ SRAM ports
  logic [1:0]        uop_we;
  logic [1:0][LOG_UOP_BUFF_DEPTH-2:0] uop_waddr;
  logic [1:0][31:0]  uop_wdata, uop_rdata;
  logic              uop_re;
  logic [LOG_UOP_BUFF_DEPTH-2:0] uop_raddr;
  logic              inp_we, inp_re;
  logic [INP_ELEM_BYTES/8-1:0] inp_wmask;
  logic [LOG_INP_BUFF_DEPTH-1:0] inp_waddr, inp_raddr;
  logic [INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  logic              wgt_we, wgt_re;
  logic [WGT_ELEM_BYTES/8-1:0] wgt_wmask;
  logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_waddr, wgt_raddr;
  logic [WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  logic              acc_we;
  logic [ACC_ELEM_BYTES/8-1:0] acc_wmask;
  logic [LOG_ACC_BUFF_DEPTH-1:0] acc_waddr;
  logic [ACC_ELEM_BITS-1:0] acc_wdata;
  logic [2:0]        acc_re;
  logic [2:0][LOG_ACC_BUFF_DEPTH-1:0] acc_raddr;
  logic [2:0][ACC_ELEM_BITS-1:0] acc_rdata;
  // COMPUTE_OVERLAP only: three uop read ports ([port][bank] addresses), two acc writers, four acc reads
  logic [2:0]        uop3_re;
  logic [2:0][1:0][LOG_UOP_BUFF_DEPTH-2:0] uop3_raddr;
  logic [2:0][1:0][31:0] uop3_rdata;
  logic [1:0]        acc2_we;
  logic [1:0][ACC_ELEM_BYTES/8-1:0] acc2_wmask;
  logic [1:0][LOG_ACC_BUFF_DEPTH-1:0] acc2_waddr;
  logic [1:0][ACC_ELEM_BITS-1:0] acc2_wdata;
  logic [2:0]        acc4_re;
  logic [2:0][LOG_ACC_BUFF_DEPTH-1:0] acc4_raddr;
  logic [2:0][ACC_ELEM_BITS-1:0] acc4_rdata;

  // ================================================================== units
  vta_vcr u_vcr (
    .clk_i,
    .rst_ni,
    .host_req_i,
    .host_we_i,
    .host_addr_i,
    .host_wdata_i,
    .host_rvalid_o,
    .host_rdata_o,
    .launch_o     (launch),
    .running_o    (running),
    .halted_o     (halted),
    .insn_addr_o  (insn_addr),
    .insn_count_o (insn_count),
    .watchdog_o   (wdog_limit),
    .finish_i     (finish),
    .err_i        (err_any),
    .err_code_i   (err_code),
    .err_field_i  (err_field),
    .err_unit_i   (err_unit),
    .err_value_i  (err_value),
    .err_limit_i  (err_limit),
    .err_index_i  (err_index),
    .state_i      (unit_state),
    .retire_i     (unit_retire),
    .index_i      (unit_index),
    .fill_i       (fill16),
    .tokens_i     (tok_count),
    .gemm_uop_i   (gemm_uop),
    .alu_uop_i    (alu_uop),
    .acc_wr_i     (acc_wr)
  );

  vta_fetch u_fetch (
    .clk_i,
    .rst_ni,
    .launch_i     (launch),
    .halt_i       (halted),
    .insn_addr_i  (insn_addr),
    .insn_count_i (insn_count),
    .req_valid_o  (cl_req_valid[0]),
    .req_ready_i  (cl_req_ready[0]),
    .req_addr_o   (cl_req_addr[0]),
    .req_len_o    (cl_req_len[0]),
    .rsp_valid_i  (cl_rsp_valid[0]),
    .rsp_data_i   (cl_rsp_data),
    .q_valid_o    (q_in_valid),
    .q_ready_i    (q_in_ready),
    .q_data_o     (q_in_data),
    .err_o        (fe_err),
    .err_field_o  (fe_field),
    .err_value_o  (fe_value),
    .err_index_o  (fe_index),
    .state_o      (unit_state[0]),
    .index_o      (unit_index[0]),
    .dispatch_o   (dispatch)
  );
  assign unit_retire[0] = dispatch;

  for (genvar q = 0; q < 3; q++) begin : g_queue
    vta_fifo #(.Width(QW), .Depth(INSN_QUEUE_DEPTH)) u_queue (
      .clk_i,
      .rst_ni,
      .wvalid_i (q_in_valid[q]),
      .wready_o (q_in_ready[q]),
      .wdata_i  (q_in_data),
      .rvalid_o (q_out_valid[q]),
      .rready_i (q_out_ready[q]),
      .rdata_o  (q_out_data[q]),
      .count_o  (q_fill[q])
    );
    assign fill16[q] = 16'(q_fill[q]);
  end

  vta_load u_load (
    .clk_i,
    .rst_ni,
    .halt_i       (halted),
    .q_valid_i    (q_out_valid[0]),
    .q_ready_o    (q_out_ready[0]),
    .q_data_i     (q_out_data[0]),
    .tok_avail_i  (tok_avail[CHAN_G2L]),
    .tok_pop_o    (tok_pop[CHAN_G2L]),
    .tok_push_o   (tok_push[CHAN_L2G]),
    .req_valid_o  (cl_req_valid[3:2]),
    .req_ready_i  (cl_req_ready[3:2]),
    .req_addr_o   (ld_req_addr),
    .req_len_o    (ld_req_len),
    .rsp_valid_i  (cl_rsp_valid[3:2]),
    .rsp_data_i   (cl_rsp_data),
    .inp_we_o     (inp_we),
    .inp_wmask_o  (inp_wmask),
    .inp_waddr_o  (inp_waddr),
    .inp_wdata_o  (inp_wdata),
    .wgt_we_o     (wgt_we),
    .wgt_wmask_o  (wgt_wmask),
    .wgt_waddr_o  (wgt_waddr),
    .wgt_wdata_o  (wgt_wdata),
    .err_o        (ld_err),
    .err_field_o  (ld_field),
    .err_value_o  (ld_value),
    .err_limit_o  (ld_limit),
    .err_index_o  (ld_index),
    .state_o      (unit_state[1]),
    .index_o      (unit_index[1]),
    .retire_o     (unit_retire[1])
  );
  assign cl_req_addr[2] = ld_req_addr;
  assign cl_req_addr[3] = ld_req_addr;
  assign cl_req_len[2]  = ld_req_len;
  assign cl_req_len[3]  = ld_req_len;

  logic [1:0] co_req_valid, co_rsp_valid;
  // COMPUTE_OVERLAP: the two-lane compute unit, three uop read ports, a two-writer acc memory
  if (COMPUTE_OVERLAP != 0) begin : g_compute_ov
    vta_compute_ov u_compute (
      .clk_i,
      .rst_ni,
      .halt_i       (halted),
      .q_valid_i    (q_out_valid[1]),
      .q_ready_o    (q_out_ready[1]),
      .q_data_i     (q_out_data[1]),
      .l2g_avail_i  (tok_avail[CHAN_L2G]),
      .s2g_avail_i  (tok_avail[CHAN_S2G]),
      .l2g_pop_o    (tok_pop[CHAN_L2G]),
      .s2g_pop_o    (tok_pop[CHAN_S2G]),
      .g2l_push_o   (tok_push[CHAN_G2L]),
      .g2s_push_o   (tok_push[CHAN_G2S]),
      .finish_o     (finish),
      .req_valid_o  (co_req_valid),
      .req_ready_i  ({cl_req_ready[4], cl_req_ready[1]}),
      .req_addr_o   (co_req_addr),
      .req_len_o    (co_req_len),
      .rsp_valid_i  (co_rsp_valid),
      .rsp_data_i   (cl_rsp_data),
      .uop_we_o     (uop_we),
      .uop_waddr_o  (uop_waddr),
      .uop_wdata_o  (uop_wdata),
      .uop_re_o     (uop3_re),
      .uop_raddr_o  (uop3_raddr),
      .uop_rdata_i  (uop3_rdata),
      .inp_re_o     (inp_re),
      .inp_raddr_o  (inp_raddr),
      .inp_rdata_i  (inp_rdata),
      .wgt_re_o     (wgt_re),
      .wgt_raddr_o  (wgt_raddr),
      .wgt_rdata_i  (wgt_rdata),
      .acc_we_o     (acc2_we),
      .acc_wmask_o  (acc2_wmask),
      .acc_waddr_o  (acc2_waddr),
      .acc_wdata_o  (acc2_wdata),
      .acc_re_o     (acc4_re),
      .acc_raddr_o  (acc4_raddr),
      .acc_rdata_i  (acc4_rdata),
      .gemm_uop_o   (gemm_uop),
      .alu_uop_o    (alu_uop),
      .acc_wr_o     (acc_wr),
      .err_o        (co_err),
      .err_field_o  (co_field),
      .err_value_o  (co_value),
      .err_limit_o  (co_limit),
      .err_index_o  (co_index),
      .state_o      (unit_state[2]),
      .index_o      (unit_index[2]),
      .retire_o     (unit_retire[2])
    );
    assign uop_re     = 1'b0;
    assign uop_raddr  = '0;
    assign acc_we     = 1'b0;
    assign acc_wmask  = '0;
    assign acc_waddr  = '0;
    assign acc_wdata  = '0;
    assign acc_re[1:0]    = '0;
    assign acc_raddr[1:0] = '0;
    logic unused_one;  // the one-lane unit's ports
    assign unused_one = ^{uop_re, uop_raddr, uop_rdata, acc_we, acc_wmask, acc_waddr, acc_wdata, acc_re[1:0],
                          acc_raddr[1:0], acc_rdata[1:0]};
  end else begin : g_compute
    vta_compute u_compute (
      .clk_i,
      .rst_ni,
      .halt_i       (halted),
      .q_valid_i    (q_out_valid[1]),
      .q_ready_o    (q_out_ready[1]),
      .q_data_i     (q_out_data[1]),
      .l2g_avail_i  (tok_avail[CHAN_L2G]),
      .s2g_avail_i  (tok_avail[CHAN_S2G]),
      .l2g_pop_o    (tok_pop[CHAN_L2G]),
      .s2g_pop_o    (tok_pop[CHAN_S2G]),
      .g2l_push_o   (tok_push[CHAN_G2L]),
      .g2s_push_o   (tok_push[CHAN_G2S]),
      .finish_o     (finish),
      .req_valid_o  (co_req_valid),
      .req_ready_i  ({cl_req_ready[4], cl_req_ready[1]}),
      .req_addr_o   (co_req_addr),
      .req_len_o    (co_req_len),
      .rsp_valid_i  (co_rsp_valid),
      .rsp_data_i   (cl_rsp_data),
      .uop_we_o     (uop_we),
      .uop_waddr_o  (uop_waddr),
      .uop_wdata_o  (uop_wdata),
      .uop_re_o     (uop_re),
      .uop_raddr_o  (uop_raddr),
      .uop_rdata_i  (uop_rdata),
      .inp_re_o     (inp_re),
      .inp_raddr_o  (inp_raddr),
      .inp_rdata_i  (inp_rdata),
      .wgt_re_o     (wgt_re),
      .wgt_raddr_o  (wgt_raddr),
      .wgt_rdata_i  (wgt_rdata),
      .acc_we_o     (acc_we),
      .acc_wmask_o  (acc_wmask),
      .acc_waddr_o  (acc_waddr),
      .acc_wdata_o  (acc_wdata),
      .acc_re_o     (acc_re[1:0]),
      .acc_raddr_o  (acc_raddr[1:0]),
      .acc_rdata_i  (acc_rdata[1:0]),
      .gemm_uop_o   (gemm_uop),
      .alu_uop_o    (alu_uop),
      .acc_wr_o     (acc_wr[0]),
      .err_o        (co_err),
      .err_field_o  (co_field),
      .err_value_o  (co_value),
      .err_limit_o  (co_limit),
      .err_index_o  (co_index),
      .state_o      (unit_state[2]),
      .index_o      (unit_index[2]),
      .retire_o     (unit_retire[2])
    );
    assign acc_wr[1]       = 1'b0;
    assign uop3_re         = '0;
    assign uop3_raddr      = '0;
    assign acc2_we         = '0;
    assign acc2_wmask      = '0;
    assign acc2_waddr      = '0;
    assign acc2_wdata      = '0;
    assign acc4_re         = '0;
    assign acc4_raddr      = '0;
    logic unused_ov;  // the option's ports, not built
    assign unused_ov = ^{uop3_re, uop3_raddr, uop3_rdata, acc2_we, acc2_wmask, acc2_waddr, acc2_wdata, acc4_re,
                         acc4_raddr, acc4_rdata};
  end
  assign cl_req_valid[1] = co_req_valid[0];
  assign cl_req_valid[4] = co_req_valid[1];
  assign cl_req_addr[1]  = co_req_addr;
  assign cl_req_addr[4]  = co_req_addr;
  assign cl_req_len[1]   = co_req_len;
  assign cl_req_len[4]   = co_req_len;
  assign co_rsp_valid    = {cl_rsp_valid[4], cl_rsp_valid[1]};

  vta_store u_store (
    .clk_i,
    .rst_ni,
    .halt_i         (halted),
    .q_valid_i      (q_out_valid[2]),
    .q_ready_o      (q_out_ready[2]),
    .q_data_i       (q_out_data[2]),
    .tok_avail_i    (tok_avail[CHAN_G2S]),
    .tok_pop_o      (tok_pop[CHAN_G2S]),
    .tok_push_o     (tok_push[CHAN_S2G]),
    .acc_re_o       (acc_re[2]),
    .acc_raddr_o    (acc_raddr[2]),
    .acc_rdata_i    (acc_rdata[2]),
    .wr_req_valid_o (wc_req_valid),
    .wr_req_ready_i (wc_req_ready),
    .wr_req_addr_o  (wc_req_addr),
    .wr_req_len_o   (wc_req_len),
    .wr_valid_o     (wc_valid),
    .wr_ready_i     (wc_ready),
    .wr_data_o      (wc_data),
    .wr_last_o      (wc_last),
    .wr_ack_i       (wc_ack),
    .err_o          (st_err),
    .err_field_o    (st_field),
    .err_value_o    (st_value),
    .err_limit_o    (st_limit),
    .err_index_o    (st_index),
    .state_o        (unit_state[3]),
    .index_o        (unit_index[3]),
    .retire_o       (unit_retire[3])
  );

  vta_tokens u_tokens (
    .clk_i,
    .rst_ni,
    .push_i     (tok_push),
    .pop_i      (tok_pop),
    .count_o    (tok_count),
    .avail_o    (tok_avail),
    .err_o      (tok_err),
    .err_chan_o (tok_err_chan)
  );

  vta_mem_engine #(.NumRd(5)) u_mem (
    .clk_i,
    .rst_ni,
    .cl_req_valid_i (cl_req_valid),
    .cl_req_ready_o (cl_req_ready),
    .cl_req_addr_i  (cl_req_addr),
    .cl_req_len_i   (cl_req_len),
    .cl_rsp_valid_o (cl_rsp_valid),
    .cl_rsp_data_o  (cl_rsp_data),
    .cl_rsp_last_o  (cl_rsp_last),
    .wc_req_valid_i (wc_req_valid),
    .wc_req_ready_o (wc_req_ready),
    .wc_req_addr_i  (wc_req_addr),
    .wc_req_len_i   (wc_req_len),
    .wc_valid_i     (wc_valid),
    .wc_ready_o     (wc_ready),
    .wc_data_i      (wc_data),
    .wc_last_i      (wc_last),
    .wc_ack_o       (wc_ack),
    .mem_rd_req_valid_o,
    .mem_rd_req_ready_i,
    .mem_rd_req_addr_o,
    .mem_rd_req_len_o,
    .mem_rd_req_id_o,
    .mem_rd_valid_i,
    .mem_rd_data_i,
    .mem_rd_id_i,
    .mem_rd_last_i,
    .mem_wr_req_valid_o,
    .mem_wr_req_ready_i,
    .mem_wr_req_addr_o,
    .mem_wr_req_len_o,
    .mem_wr_valid_o,
    .mem_wr_ready_i,
    .mem_wr_data_o,
    .mem_wr_strb_o,
    .mem_wr_last_o,
    .mem_wr_ack_i,
    .beat_o         (mem_beat)
  );

  // Progress: any unit executing, or a memory beat. Waiting on tokens or a full queue is not.
  logic progress;
  always_comb begin
    progress = mem_beat || dispatch;
    for (int unsigned u = 0; u < 4; u++) begin
      if (32'(unit_state[u]) == STATE_BUSY) progress = 1'b1;
    end
  end

  vta_watchdog u_watchdog (
    .clk_i,
    .rst_ni,
    .running_i  (running),
    .progress_i (progress),
    .limit_i    (wdog_limit),
    .fire_o     (wd_fire)
  );

  // ================================================================== errors (first unit wins)
  logic        err_any;
  logic [7:0]  err_code, err_field;
  logic [3:0]  err_unit;
  logic [31:0] err_value, err_limit, err_index;

  always_comb begin
    err_any   = 1'b1;
    err_code  = 8'(ERR_NONE);
    err_field = 8'(FIELD_NONE);
    err_unit  = 4'(UNIT_NONE);
    err_value = '0;
    err_limit = '0;
    err_index = '0;
    if (fe_err) begin
      err_code = 8'(ERR_INVALID_INSN); err_field = fe_field; err_unit = 4'(UNIT_FETCH);
      err_value = fe_value; err_index = fe_index;
    end else if (ld_err) begin
      err_code = 8'(ERR_SRAM_INDEX); err_field = ld_field; err_unit = 4'(UNIT_LOAD);
      err_value = ld_value; err_limit = ld_limit; err_index = ld_index;
    end else if (co_err) begin
      err_code = 8'(ERR_SRAM_INDEX); err_field = co_field; err_unit = 4'(UNIT_COMPUTE);
      err_value = co_value; err_limit = co_limit; err_index = co_index;
    end else if (st_err) begin
      err_code = 8'(ERR_SRAM_INDEX); err_field = st_field; err_unit = 4'(UNIT_STORE);
      err_value = st_value; err_limit = st_limit; err_index = st_index;
    end else if (tok_err) begin
      err_code = 8'(ERR_TOKEN_OVERFLOW); err_field = 8'(FIELD_CHANNEL); err_unit = 4'(UNIT_TOKENS);
      err_value = 32'(tok_err_chan); err_limit = TOKEN_MAX;
      // the producing unit's current instruction
      unique case (32'(tok_err_chan))
        CHAN_L2G:          err_index = ld_index;
        CHAN_G2L, CHAN_G2S: err_index = co_index;
        default:           err_index = st_index;
      endcase
    end else if (wd_fire) begin
      err_code = 8'(ERR_WATCHDOG); err_unit = 4'(UNIT_WATCHDOG);
      err_value = wdog_limit; err_limit = wdog_limit; err_index = unit_index[2];
    end else begin
      err_any = 1'b0;
    end
  end

  // ================================================================== scratchpads
  // The uop buffer: two banks (even / odd index); with COMPUTE_OVERLAP three read ports each
  // (lane G, lane M, the footprint scanner), else one.
  localparam int unsigned UopRd = (COMPUTE_OVERLAP != 0) ? 3 : 1;
  logic [UopRd-1:0] uopx_re;
  logic [1:0][UopRd-1:0][LOG_UOP_BUFF_DEPTH-2:0] uopx_raddr;
  logic [1:0][UopRd-1:0][31:0] uopx_rdata;
  if (COMPUTE_OVERLAP != 0) begin : g_uop_ov
    assign uopx_re = uop3_re;
    for (genvar b = 0; b < 2; b++) begin : g_bank
      for (genvar p = 0; p < 3; p++) begin : g_port
        assign uopx_raddr[b][p] = uop3_raddr[p][b];
        assign uop3_rdata[p][b] = uopx_rdata[b][p];
      end
    end
    assign uop_rdata = '0;
  end else begin : g_uop_one
    assign uopx_re = uop_re;
    for (genvar b = 0; b < 2; b++) begin : g_bank
      assign uopx_raddr[b] = uop_raddr;
      assign uop_rdata[b]  = uopx_rdata[b];
    end
    assign uop3_rdata = '0;
  end
  for (genvar b = 0; b < 2; b++) begin : g_uop_bank
    vta_sram #(.Width(32), .Depth(UOP_BUFF_DEPTH / 2), .Lanes(1), .NumRd(UopRd)) u_uop (
      .clk_i,
      .we_i    (uop_we[b]),
      .wmask_i (1'b1),
      .waddr_i (uop_waddr[b]),
      .wdata_i (uop_wdata[b]),
      .re_i    (uopx_re),
      .raddr_i (uopx_raddr[b]),
      .rdata_o (uopx_rdata[b])
    );
  end

  vta_sram #(.Width(INP_ELEM_BITS), .Depth(INP_BUFF_DEPTH), .Lanes(INP_ELEM_BYTES / 8), .NumRd(1)) u_inp (
    .clk_i,
    .we_i    (inp_we),
    .wmask_i (inp_wmask),
    .waddr_i (inp_waddr),
    .wdata_i (inp_wdata),
    .re_i    (inp_re),
    .raddr_i (inp_raddr),
    .rdata_o (inp_rdata)
  );

  vta_sram #(.Width(WGT_ELEM_BITS), .Depth(WGT_BUFF_DEPTH), .Lanes(WGT_ELEM_BYTES / 8), .NumRd(1)) u_wgt (
    .clk_i,
    .we_i    (wgt_we),
    .wmask_i (wgt_wmask),
    .waddr_i (wgt_waddr),
    .wdata_i (wgt_wdata),
    .re_i    (wgt_re),
    .raddr_i (wgt_raddr),
    .rdata_o (wgt_rdata)
  );

  // The accumulator buffer u_acc: read ports 0 dst, 1 ALU src, 2 store; with COMPUTE_OVERLAP it is
  // the GEMM lane's bank of a two-writer memory (vta_acc_lvt adds the other lane's bank and the
  // live-value table) with read ports 0 lane G dst, 1 lane M dst, 2 lane M src, 3 store.
  localparam int unsigned AccRd = (COMPUTE_OVERLAP != 0) ? 4 : 3;
  logic [AccRd-1:0] accx_re;
  logic [AccRd-1:0][LOG_ACC_BUFF_DEPTH-1:0] accx_raddr;
  logic [AccRd-1:0][ACC_ELEM_BITS-1:0] accx_bank0, accx_rdata;
  logic              acc0_we;
  logic [ACC_ELEM_BYTES/8-1:0] acc0_wmask;
  logic [LOG_ACC_BUFF_DEPTH-1:0] acc0_waddr;
  logic [ACC_ELEM_BITS-1:0] acc0_wdata;
  if (COMPUTE_OVERLAP != 0) begin : g_acc_ov
    assign accx_re    = {acc_re[2], acc4_re[2:0]};
    assign accx_raddr = {acc_raddr[2], acc4_raddr[2:0]};
    assign acc0_we    = acc2_we[0];
    assign acc0_wmask = acc2_wmask[0];
    assign acc0_waddr = acc2_waddr[0];
    assign acc0_wdata = acc2_wdata[0];
    vta_acc_lvt #(.Width(ACC_ELEM_BITS), .Depth(ACC_BUFF_DEPTH), .Lanes(ACC_ELEM_BYTES / 8), .NumRd(4)) u_acc_ov (
      .clk_i,
      .we_i         (acc2_we),
      .wmask_i      (acc2_wmask),
      .waddr_i      (acc2_waddr),
      .wdata1_i     (acc2_wdata[1]),
      .re_i         (accx_re),
      .raddr_i      (accx_raddr),
      .bank0_rdata_i(accx_bank0),
      .rdata_o      (accx_rdata)
    );
    assign acc4_rdata = accx_rdata[2:0];
    assign acc_rdata  = {accx_rdata[3], {2 * ACC_ELEM_BITS{1'b0}}};
  end else begin : g_acc_one
    assign accx_re    = acc_re;
    assign accx_raddr = acc_raddr;
    assign acc0_we    = acc_we;
    assign acc0_wmask = acc_wmask;
    assign acc0_waddr = acc_waddr;
    assign acc0_wdata = acc_wdata;
    assign accx_rdata = accx_bank0;
    assign acc_rdata  = accx_rdata;
    assign acc4_rdata = '0;
  end
  vta_sram #(.Width(ACC_ELEM_BITS), .Depth(ACC_BUFF_DEPTH), .Lanes(ACC_ELEM_BYTES / 8), .NumRd(AccRd)) u_acc (
    .clk_i,
    .we_i    (acc0_we),
    .wmask_i (acc0_wmask),
    .waddr_i (acc0_waddr),
    .wdata_i (acc0_wdata),
    .re_i    (accx_re),
    .raddr_i (accx_raddr),
    .rdata_o (accx_bank0)
  );

  logic unused;
  assign unused = ^{cl_rsp_last};
endmodule : vta_top
