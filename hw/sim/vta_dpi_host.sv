// Simulation only: the host side of the VTA register port, driven from C through DPI.
//
// Every clock edge the C shim (sim/vta_tsim.cc) sees the register-port response of the previous
// cycle and may hand over one request (a read or a write of a 32-bit register). The request is
// registered here, so the core sees it one cycle after the shim issued it. The exchange is made
// only while poll_i is high (the shim has a request to hand over or awaits a read's response);
// in the other cycles it would return no request, so none is registered without calling it.
module vta_dpi_host (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        poll_i,
  output logic        host_req_o,
  output logic        host_we_o,
  output logic [7:0]  host_addr_o,
  output logic [31:0] host_wdata_o,
  input  logic        host_rvalid_i,
  input  logic [31:0] host_rdata_i
);

  // Exchange one cycle of the register port with the shim.
  import "DPI-C" function void vta_dpi_host_tick(
    input  bit           rvalid,
    input  int unsigned  rdata,
    output bit           req,
    output bit           we,
    output byte unsigned addr,
    output int unsigned  wdata
  );

  bit           req_d, we_d;
  byte unsigned addr_d;
  int unsigned  wdata_d;
  logic         req_q, we_q;
  logic [7:0]   addr_q;
  logic [31:0]  wdata_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      req_q   <= 1'b0;
      we_q    <= 1'b0;
      addr_q  <= '0;
      wdata_q <= '0;
    end else if (poll_i) begin
      vta_dpi_host_tick(host_rvalid_i, host_rdata_i, req_d, we_d, addr_d, wdata_d);
      req_q   <= req_d;
      we_q    <= we_d;
      addr_q  <= addr_d;
      wdata_q <= wdata_d;
    end else begin
      req_q   <= 1'b0;
      we_q    <= 1'b0;
      addr_q  <= '0;
      wdata_q <= '0;
    end
  end

  assign host_req_o   = req_q;
  assign host_we_o    = we_q;
  assign host_addr_o  = addr_q;
  assign host_wdata_o = wdata_q;

endmodule
