// Simulation only: the DRAM model behind the core's 64-bit memory channels, served from C.
//
// Reads: every request is accepted at once (ready is always high) and queued by the shim, which
// returns one beat per cycle, in request order, one cycle after the request at the earliest.
// Writes: one burst's data at a time. A request is accepted when no burst is open or in the
// cycle of the open burst's last beat (so bursts stream back to back), then len+1 beats are
// accepted back to back, and the cycle after the last beat of each burst its ack is pulsed.
// The shim checks every burst against the DRAM arena and reports a DRAM error with its address,
// and checks the channel rules of vta_top (8-byte aligned bursts of at most 16 beats that never
// cross a 128-byte boundary; `last` exactly on the final write beat), reporting a violation.
module vta_dpi_mem (
  input  logic        clk_i,
  input  logic        rst_ni,
  // read channel (core side)
  input  logic        rd_req_valid_i,
  output logic        rd_req_ready_o,
  input  logic [31:0] rd_req_addr_i,
  input  logic [7:0]  rd_req_len_i,
  input  logic [7:0]  rd_req_id_i,
  output logic        rd_valid_o,
  output logic [63:0] rd_data_o,
  output logic [7:0]  rd_id_o,
  output logic        rd_last_o,
  // write channel (core side)
  input  logic        wr_req_valid_i,
  output logic        wr_req_ready_o,
  input  logic [31:0] wr_req_addr_i,
  input  logic [7:0]  wr_req_len_i,
  input  logic        wr_valid_i,
  output logic        wr_ready_o,
  input  logic [63:0] wr_data_i,
  input  logic [7:0]  wr_strb_i,
  input  logic        wr_last_i,
  output logic        wr_ack_o
);

  // Hand the shim this edge's accepted read request, write request and write beat; get back the
  // read beat to present during the next cycle and whether more read beats are queued.
  import "DPI-C" function void vta_dpi_mem_tick(
    input  bit               rd_req,
    input  int unsigned      rd_addr,
    input  byte unsigned     rd_len,
    input  byte unsigned     rd_id,
    input  bit               wr_req,
    input  int unsigned      wr_addr,
    input  byte unsigned     wr_len,
    input  bit               wr_beat,
    input  longint unsigned  wr_data,
    input  byte unsigned     wr_strb,
    input  bit               wr_last,
    output bit               rd_valid,
    output longint unsigned  rd_data,
    output byte unsigned     rd_id_out,
    output bit               rd_last,
    output bit               rd_busy
  );

  // The edges with read bursts outstanding and nothing to hand over (most edges of a load): the
  // read beat to present during the next cycle and whether more are queued, with no arguments to
  // pass (vta_dpi_mem_tick does the same after taking the edge's requests and write beat).
  import "DPI-C" function void vta_dpi_mem_beat(
    output bit               rd_valid,
    output longint unsigned  rd_data,
    output byte unsigned     rd_id_out,
    output bit               rd_last,
    output bit               rd_busy
  );

  logic            wr_open_q, wr_ack_q;
  logic            rd_valid_q, rd_last_q, rd_busy_q;
  logic [63:0]     rd_data_q;
  logic [7:0]      rd_id_q;
  bit              rd_valid_d, rd_last_d, rd_busy_d;
  byte unsigned    rd_id_d;
  longint unsigned rd_data_d;

  logic rd_req_fire, wr_req_fire, wr_beat_fire, wr_last_fire;
  assign rd_req_ready_o = 1'b1;
  assign wr_ready_o     = wr_open_q;
  assign wr_ack_o       = wr_ack_q;
  assign wr_beat_fire   = wr_valid_i && wr_ready_o;
  assign wr_last_fire   = wr_beat_fire && wr_last_i;
  assign wr_req_ready_o = !wr_open_q || wr_last_fire;
  assign rd_req_fire    = rd_req_valid_i;
  assign wr_req_fire    = wr_req_valid_i && wr_req_ready_o;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_open_q  <= 1'b0;
      wr_ack_q   <= 1'b0;
      rd_valid_q <= 1'b0;
      rd_data_q  <= '0;
      rd_id_q    <= '0;
      rd_last_q  <= 1'b0;
      rd_busy_q  <= 1'b0;
    end else begin
      if (rd_req_fire || wr_req_fire || wr_beat_fire || rd_busy_q) begin
        if (rd_req_fire || wr_req_fire || wr_beat_fire) begin
          vta_dpi_mem_tick(rd_req_fire, rd_req_addr_i, rd_req_len_i, rd_req_id_i,
                           wr_req_fire, wr_req_addr_i, wr_req_len_i,
                           wr_beat_fire, wr_data_i, wr_strb_i, wr_last_i,
                           rd_valid_d, rd_data_d, rd_id_d, rd_last_d, rd_busy_d);
        end else begin
          vta_dpi_mem_beat(rd_valid_d, rd_data_d, rd_id_d, rd_last_d, rd_busy_d);
        end
        rd_valid_q <= rd_valid_d;
        rd_data_q  <= rd_data_d;
        rd_id_q    <= rd_id_d;
        rd_last_q  <= rd_last_d;
        rd_busy_q  <= rd_busy_d;
      end else begin
        rd_valid_q <= 1'b0;
        rd_last_q  <= 1'b0;
      end
      if (wr_req_fire) wr_open_q <= 1'b1;
      else if (wr_last_fire) wr_open_q <= 1'b0;
      wr_ack_q <= wr_last_fire;
    end
  end

  assign rd_valid_o = rd_valid_q;
  assign rd_data_o  = rd_data_q;
  assign rd_id_o    = rd_id_q;
  assign rd_last_o  = rd_last_q;

endmodule
