// Simulation only: the Verilator top level of tsim. The accelerator core vta_top with its host
// register port and both memory channels connected to the DPI models, and the profiler's probe.
// The shim drives clk_i, rst_ni, host_poll_i and probe_en_i, and counts the clock edges out of
// reset itself (the cycle count it reports), so no DPI call is made for that.
module vta_tsim_top (
  input logic clk_i,
  // Waiver: rst_ni resets the flops asynchronously and is also sampled on the clock by the
  // `disable iff (!rst_ni)` of the core's assertions; both uses are intended.
  /* verilator lint_off SYNCASYNCNET */
  input logic rst_ni,
  /* verilator lint_on SYNCASYNCNET */
  // High while the shim has a register access to hand over or awaits a read's response
  // (vta_dpi_host exchanges nothing with the shim in the other cycles).
  input logic host_poll_i,
  // The profiler's probe (vta_dpi_probe): 0 except while the shim traces a run.
  input logic probe_en_i
);

  logic        host_req, host_we, host_rvalid;
  logic [7:0]  host_addr;
  logic [31:0] host_wdata, host_rdata;

  logic        rd_req_valid, rd_req_ready, rd_valid, rd_last;
  logic [31:0] rd_req_addr;
  logic [7:0]  rd_req_len, rd_req_id, rd_id;
  logic [63:0] rd_data;

  logic        wr_req_valid, wr_req_ready, wr_valid, wr_ready, wr_last, wr_ack;
  logic [31:0] wr_req_addr;
  logic [7:0]  wr_req_len, wr_strb;
  logic [63:0] wr_data;

  vta_dpi_host u_host (
    .clk_i,
    .rst_ni,
    .poll_i        (host_poll_i),
    .host_req_o    (host_req),
    .host_we_o     (host_we),
    .host_addr_o   (host_addr),
    .host_wdata_o  (host_wdata),
    .host_rvalid_i (host_rvalid),
    .host_rdata_i  (host_rdata)
  );

  vta_dpi_mem u_mem (
    .clk_i,
    .rst_ni,
    .rd_req_valid_i (rd_req_valid),
    .rd_req_ready_o (rd_req_ready),
    .rd_req_addr_i  (rd_req_addr),
    .rd_req_len_i   (rd_req_len),
    .rd_req_id_i    (rd_req_id),
    .rd_valid_o     (rd_valid),
    .rd_data_o      (rd_data),
    .rd_id_o        (rd_id),
    .rd_last_o      (rd_last),
    .wr_req_valid_i (wr_req_valid),
    .wr_req_ready_o (wr_req_ready),
    .wr_req_addr_i  (wr_req_addr),
    .wr_req_len_i   (wr_req_len),
    .wr_valid_i     (wr_valid),
    .wr_ready_o     (wr_ready),
    .wr_data_i      (wr_data),
    .wr_strb_i      (wr_strb),
    .wr_last_i      (wr_last),
    .wr_ack_o       (wr_ack)
  );

  vta_top u_core (
    .clk_i,
    .rst_ni,
    .host_req_i         (host_req),
    .host_we_i          (host_we),
    .host_addr_i        (host_addr),
    .host_wdata_i       (host_wdata),
    .host_rvalid_o      (host_rvalid),
    .host_rdata_o       (host_rdata),
    .mem_rd_req_valid_o (rd_req_valid),
    .mem_rd_req_ready_i (rd_req_ready),
    .mem_rd_req_addr_o  (rd_req_addr),
    .mem_rd_req_len_o   (rd_req_len),
    .mem_rd_req_id_o    (rd_req_id),
    .mem_rd_valid_i     (rd_valid),
    .mem_rd_data_i      (rd_data),
    .mem_rd_id_i        (rd_id),
    .mem_rd_last_i      (rd_last),
    .mem_wr_req_valid_o (wr_req_valid),
    .mem_wr_req_ready_i (wr_req_ready),
    .mem_wr_req_addr_o  (wr_req_addr),
    .mem_wr_req_len_o   (wr_req_len),
    .mem_wr_valid_o     (wr_valid),
    .mem_wr_ready_i     (wr_ready),
    .mem_wr_data_o      (wr_data),
    .mem_wr_strb_o      (wr_strb),
    .mem_wr_last_o      (wr_last),
    .mem_wr_ack_i       (wr_ack)
  );

  // Reads the core's status signals by hierarchical reference, so the core has no port for it.
  vta_dpi_probe u_probe (
    .clk_i,
    .rst_ni,
    .en_i      (probe_en_i),
    .running_i (u_core.running),
    .state_i   (u_core.unit_state),
    .retire_i  (u_core.unit_retire),
    .index_i   (u_core.unit_index),
    .fill_i    (u_core.fill16),
    .tokens_i  (u_core.tok_count),
    .push_i    (u_core.tok_push),
    .pop_i     (u_core.tok_pop),
    .rd_beat_i (u_core.cl_rsp_valid),
    .wr_beat_i (wr_valid && wr_ready)
  );

endmodule
