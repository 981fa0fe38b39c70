// Host registers (the map is in vta/sim/hwgen.py and vta_pkg REG_*): control, launch and
// finish, the error latch, and the per-run event counters. One access per cycle; read data
// is returned the cycle after the request.
module vta_vcr import vta_pkg::*; (
  input  logic            clk_i,
  input  logic            rst_ni,
  // host port
  input  logic            host_req_i,
  input  logic            host_we_i,
  input  logic [7:0]      host_addr_i,
  input  logic [31:0]     host_wdata_i,
  output logic            host_rvalid_o,
  output logic [31:0]     host_rdata_o,
  // run control
  output logic            launch_o,
  output logic            running_o,
  output logic            halted_o,
  output logic [31:0]     insn_addr_o,
  output logic [31:0]     insn_count_o,
  output logic [31:0]     watchdog_o,
  input  logic            finish_i,
  // error report (already prioritised)
  input  logic            err_i,
  input  logic [7:0]      err_code_i,
  input  logic [7:0]      err_field_i,
  input  logic [3:0]      err_unit_i,
  input  logic [31:0]     err_value_i,
  input  logic [31:0]     err_limit_i,
  input  logic [31:0]     err_index_i,
  // unit status: 0 fetch, 1 load, 2 compute, 3 store
  input  logic [3:0][1:0] state_i,
  input  logic [3:0]      retire_i,
  input  logic [3:0][31:0] index_i,
  input  logic [2:0][15:0] fill_i,
  input  logic [3:0][7:0] tokens_i,
  input  logic            gemm_uop_i,
  input  logic            alu_uop_i,
  input  logic [1:0]      acc_wr_i   // GEMM / ALU uops that wrote acc (two with COMPUTE_OVERLAP)
);
  logic [2:0]  ctrl_q, ctrl_d;
  logic        running_q, running_d, halted_q, halted_d;
  logic [31:0] val_q, wdog_q;
  logic [5:0][31:0] ptr_q;
  logic [31:0] cycles_q, cycles_d, ucnt_q, ucnt_d, gemm_q, gemm_d, alu_q, alu_d;
  logic [3:0][31:0] busy_q, busy_d, stall_q, stall_d, retired_q, retired_d;
  logic [7:0]  e_code_q, e_field_q;
  logic [3:0]  e_unit_q;
  logic [31:0] e_value_q, e_limit_q, e_index_q;
  logic        err_take;
  logic        rvalid_q, rvalid_d;
  logic [31:0] rdata_q, rdata_d;
  logic        launch, wr_ctrl;

  assign wr_ctrl  = host_req_i && host_we_i && host_addr_i == REG_CTRL;
  assign launch   = wr_ctrl && host_wdata_i[0] && !ctrl_q[0] && !running_q && !halted_q;
  assign err_take = err_i && !halted_q;  // the first error is kept until reset

  always_comb begin
    ctrl_d    = ctrl_q;
    running_d = running_q;
    halted_d  = halted_q;
    cycles_d  = cycles_q;
    ucnt_d    = ucnt_q;
    gemm_d    = gemm_q;
    alu_d     = alu_q;
    busy_d    = busy_q;
    stall_d   = stall_q;
    retired_d = retired_q;

    // host writes (of the other registers: below)
    if (wr_ctrl) ctrl_d = host_wdata_i[2:0];

    // per-run counters
    if (launch) begin
      running_d = 1'b1;
      cycles_d  = '0;
      ucnt_d    = '0;
      gemm_d    = '0;
      alu_d     = '0;
      busy_d    = '0;
      stall_d   = '0;
      retired_d = '0;
    end else if (running_q) begin
      cycles_d = cycles_q + 32'd1;
      if (acc_wr_i != '0) ucnt_d = ucnt_q + 32'(acc_wr_i[0]) + 32'(acc_wr_i[1]);
      if (gemm_uop_i) gemm_d = gemm_q + 32'd1;
      if (alu_uop_i)  alu_d = alu_q + 32'd1;
      for (int unsigned u = 0; u < 4; u++) begin
        if (32'(state_i[u]) == STATE_BUSY) busy_d[u] = busy_q[u] + 32'd1;
        if (32'(state_i[u]) == STATE_WAIT_TOKEN || 32'(state_i[u]) == STATE_BLOCKED) begin
          stall_d[u] = stall_q[u] + 32'd1;
        end
        if (retire_i[u]) retired_d[u] = retired_q[u] + 32'd1;
      end
    end

    // finish and errors
    if (running_q && finish_i && !err_i) begin
      ctrl_d    = 3'b010;
      running_d = 1'b0;
    end
    if (err_take) begin
      ctrl_d    = 3'b110;
      running_d = 1'b0;
      halted_d  = 1'b1;
    end
  end

  // host reads: the read data is valid with rvalid only (0 in the other cycles), so the register
  // map is decoded only in the cycle of a read
  always_comb begin
    rvalid_d = host_req_i && !host_we_i;
    rdata_d  = '0;
    if (rvalid_d) begin
      unique case (host_addr_i)
        REG_CTRL:            rdata_d = {29'd0, ctrl_q};
        REG_ECNT0:           rdata_d = cycles_q;
        REG_VAL0:            rdata_d = val_q;
        REG_PTR0:            rdata_d = ptr_q[0];
        REG_PTR1:            rdata_d = ptr_q[1];
        REG_PTR2:            rdata_d = ptr_q[2];
        REG_PTR3:            rdata_d = ptr_q[3];
        REG_PTR4:            rdata_d = ptr_q[4];
        REG_PTR5:            rdata_d = ptr_q[5];
        REG_UCNT0:           rdata_d = ucnt_q;
        REG_STATUS:          rdata_d = {12'd0, e_unit_q, e_field_q, e_code_q};
        REG_ERR_INSN:        rdata_d = e_index_q;
        REG_ERR_VALUE:       rdata_d = e_value_q;
        REG_ERR_LIMIT:       rdata_d = e_limit_q;
        REG_WATCHDOG:        rdata_d = wdog_q;
        REG_CONFIG:          rdata_d = {8'(CONFIG_MAGIC), 7'd0, 3'(LOG_ACC_WIDTH), 3'(LOG_WGT_WIDTH),
                                        3'(LOG_INP_WIDTH), 4'(LOG_BLOCK), 4'(LOG_BATCH)};
        REG_BUSY_FETCH:      rdata_d = busy_q[0];
        REG_BUSY_LOAD:       rdata_d = busy_q[1];
        REG_BUSY_COMPUTE:    rdata_d = busy_q[2];
        REG_BUSY_STORE:      rdata_d = busy_q[3];
        REG_STALL_FETCH:     rdata_d = stall_q[0];
        REG_STALL_LOAD:      rdata_d = stall_q[1];
        REG_STALL_COMPUTE:   rdata_d = stall_q[2];
        REG_STALL_STORE:     rdata_d = stall_q[3];
        REG_RETIRED_FETCH:   rdata_d = retired_q[0];
        REG_RETIRED_LOAD:    rdata_d = retired_q[1];
        REG_RETIRED_COMPUTE: rdata_d = retired_q[2];
        REG_RETIRED_STORE:   rdata_d = retired_q[3];
        REG_TOKENS_L2G:      rdata_d = 32'(tokens_i[CHAN_L2G]);
        REG_TOKENS_G2L:      rdata_d = 32'(tokens_i[CHAN_G2L]);
        REG_TOKENS_G2S:      rdata_d = 32'(tokens_i[CHAN_G2S]);
        REG_TOKENS_S2G:      rdata_d = 32'(tokens_i[CHAN_S2G]);
        REG_INDEX_FETCH:     rdata_d = index_i[0];
        REG_INDEX_LOAD:      rdata_d = index_i[1];
        REG_INDEX_COMPUTE:   rdata_d = index_i[2];
        REG_INDEX_STORE:     rdata_d = index_i[3];
        REG_FILL_LOAD:       rdata_d = 32'(fill_i[0]);
        REG_FILL_COMPUTE:    rdata_d = 32'(fill_i[1]);
        REG_FILL_STORE:      rdata_d = 32'(fill_i[2]);
        REG_UNIT_STATE:      rdata_d = {16'd0, 2'd0, state_i[3], 2'd0, state_i[2],
                                        2'd0, state_i[1], 2'd0, state_i[0]};
        REG_GEMM_UOPS:       rdata_d = gemm_q;
        REG_ALU_UOPS:        rdata_d = alu_q;
        default:             rdata_d = '0;
      endcase
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ctrl_q    <= '0;
      running_q <= 1'b0;
      halted_q  <= 1'b0;
      cycles_q  <= '0;
      ucnt_q    <= '0;
      gemm_q    <= '0;
      alu_q     <= '0;
      busy_q    <= '0;
      stall_q   <= '0;
      retired_q <= '0;
      rvalid_q  <= 1'b0;
      rdata_q   <= '0;
    end else begin
      ctrl_q    <= ctrl_d;
      running_q <= running_d;
      halted_q  <= halted_d;
      cycles_q  <= cycles_d;
      ucnt_q    <= ucnt_d;
      gemm_q    <= gemm_d;
      alu_q     <= alu_d;
      busy_q    <= busy_d;
      stall_q   <= stall_d;
      retired_q <= retired_d;
      rvalid_q  <= rvalid_d;
      rdata_q   <= rdata_d;
    end
  end

  // Registers written by a host write or the first error only: enabled registers, so a
  // simulator does not copy them every cycle.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      val_q  <= '0;
      wdog_q <= 32'(WATCHDOG_DEFAULT);
      ptr_q  <= '0;
    end else if (host_req_i && host_we_i) begin
      unique case (host_addr_i)
        REG_VAL0:     val_q <= host_wdata_i;
        REG_PTR0:     ptr_q[0] <= host_wdata_i;
        REG_PTR1:     ptr_q[1] <= host_wdata_i;
        REG_PTR2:     ptr_q[2] <= host_wdata_i;
        REG_PTR3:     ptr_q[3] <= host_wdata_i;
        REG_PTR4:     ptr_q[4] <= host_wdata_i;
        REG_PTR5:     ptr_q[5] <= host_wdata_i;
        REG_WATCHDOG: wdog_q <= host_wdata_i;
        default: ;
      endcase
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      e_code_q  <= '0;
      e_field_q <= '0;
      e_unit_q  <= '0;
      e_value_q <= '0;
      e_limit_q <= '0;
      e_index_q <= '0;
    end else if (err_take) begin
      e_code_q  <= err_code_i;
      e_field_q <= err_field_i;
      e_unit_q  <= err_unit_i;
      e_value_q <= err_value_i;
      e_limit_q <= err_limit_i;
      e_index_q <= err_index_i;
    end
  end

  assign host_rvalid_o = rvalid_q;
  assign host_rdata_o  = rdata_q;
  assign launch_o      = launch;
  assign running_o     = running_q;
  assign halted_o      = halted_q;
  assign insn_addr_o   = ptr_q[0];
  assign insn_count_o  = val_q;
  assign watchdog_o    = wdog_q;

  // an immediate assertion on the clock edge over the values before it (what a concurrent one
  // samples), run only in an edge where the check fails (see vta_insn_seq)
  always_ff @(posedge clk_i) begin
    if (rst_ni && launch && (running_q || halted_q)) begin
      LaunchNeedsIdle: assert (!launch || (!running_q && !halted_q))
        else $error("vta_vcr: launch while running");
    end
  end
endmodule : vta_vcr
