// TEMPORARY stand-in for the accelerator core, used only to bring up the tsim flow until the
// real vta_top lands. Same ports as vta_top. Registers 0x00..0xFC read back what was written.
// On launch (CTRL bit 0 rising) it reads VAL0 beats (1..16) from PTR0 in one burst, writes them
// back to PTR1 in one burst, then sets CTRL = 2 and ECNT0 = cycles since launch.
module vta_top import vta_pkg::*; (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        host_req_i,
  input  logic        host_we_i,
  input  logic [7:0]  host_addr_i,
  input  logic [31:0] host_wdata_i,
  output logic        host_rvalid_o,
  output logic [31:0] host_rdata_o,
  output logic        mem_rd_req_valid_o,
  input  logic        mem_rd_req_ready_i,
  output logic [31:0] mem_rd_req_addr_o,
  output logic [7:0]  mem_rd_req_len_o,
  output logic [7:0]  mem_rd_req_id_o,
  input  logic        mem_rd_valid_i,
  input  logic [63:0] mem_rd_data_i,
  input  logic [7:0]  mem_rd_id_i,
  input  logic        mem_rd_last_i,
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
  typedef enum logic [2:0] {Idle, RdReq, RdData, WrReq, WrData, WrAck} state_e;
  state_e state_q;
  logic [31:0] regs_q [64];
  logic [63:0] buf_q [16];
  logic [4:0]  cnt_q;
  logic [31:0] cycles_q;
  logic        launch_q;
  logic        rvalid_q;
  logic [31:0] rdata_q;
  logic [4:0]  nbeats;
  assign nbeats = regs_q[2][4:0];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= Idle;
      for (int i = 0; i < 64; i++) regs_q[i] <= '0;
      cnt_q <= '0;
      cycles_q <= '0;
      launch_q <= 1'b0;
      rvalid_q <= 1'b0;
      rdata_q <= '0;
    end else begin
      rvalid_q <= host_req_i && !host_we_i;
      rdata_q <= (host_addr_i == REG_CONFIG) ? {8'(CONFIG_MAGIC), 7'd0, 3'(LOG_ACC_WIDTH), 3'(LOG_WGT_WIDTH),
                                                  3'(LOG_INP_WIDTH), 4'(LOG_BLOCK), 4'(LOG_BATCH)}
                                               : regs_q[host_addr_i[7:2]];
      if (host_req_i && host_we_i) regs_q[host_addr_i[7:2]] <= host_wdata_i;
      launch_q <= regs_q[0][0];
      cycles_q <= cycles_q + 1;
      unique case (state_q)
        Idle: if (regs_q[0][0] && !launch_q) begin state_q <= RdReq; cycles_q <= '0; cnt_q <= '0; end
        RdReq: if (mem_rd_req_ready_i) state_q <= RdData;
        RdData: if (mem_rd_valid_i) begin
          buf_q[cnt_q[3:0]] <= mem_rd_data_i;
          cnt_q <= cnt_q + 1;
          if (mem_rd_last_i) state_q <= WrReq;
        end
        WrReq: if (mem_wr_req_ready_i) begin state_q <= WrData; cnt_q <= '0; end
        WrData: if (mem_wr_ready_i) begin
          cnt_q <= cnt_q + 1;
          if (cnt_q + 1 == nbeats) state_q <= WrAck;
        end
        WrAck: if (mem_wr_ack_i) begin
          state_q <= Idle;
          regs_q[0] <= 32'd2;
          regs_q[1] <= cycles_q;
        end
        default: state_q <= Idle;
      endcase
    end
  end

  assign host_rvalid_o = rvalid_q;
  assign host_rdata_o = rdata_q;
  assign mem_rd_req_valid_o = (state_q == RdReq);
  assign mem_rd_req_addr_o = regs_q[3];
  assign mem_rd_req_len_o = {3'b0, nbeats} - 8'd1;
  assign mem_rd_req_id_o = 8'd3;
  assign mem_wr_req_valid_o = (state_q == WrReq);
  assign mem_wr_req_addr_o = regs_q[4];
  assign mem_wr_req_len_o = {3'b0, nbeats} - 8'd1;
  assign mem_wr_valid_o = (state_q == WrData);
  assign mem_wr_data_o = buf_q[cnt_q[3:0]];
  assign mem_wr_strb_o = 8'hff;
  assign mem_wr_last_o = (state_q == WrData) && (cnt_q + 1 == nbeats);
endmodule
