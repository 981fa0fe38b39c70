// Synthesis view of vta_sram (hw/vta_sram.sv): the same ports, parameters and behaviour
// (synchronous write of the enabled 64-bit lanes, registered write-first reads on NumRd
// ports), written in the form synthesis tools infer as a memory. The simulation view updates
// its storage with blocking writes inside the clocked process for simulator speed, which a
// synthesis front end elaborates lane by lane into flip-flops; this view keeps the array a
// memory, so `vta.hw.area` reports it as SRAM bits. Only the area flow reads this file.
module vta_sram #(
  parameter int unsigned Width = 64,
  parameter int unsigned Depth = 16,
  parameter int unsigned Lanes = 1,
  parameter int unsigned NumRd = 1,
  localparam int unsigned AddrW = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic                         clk_i,
  input  logic                         we_i,
  input  logic [Lanes-1:0]             wmask_i,
  input  logic [AddrW-1:0]             waddr_i,
  input  logic [Width-1:0]             wdata_i,
  input  logic [NumRd-1:0]             re_i,
  input  logic [NumRd-1:0][AddrW-1:0]  raddr_i,
  output logic [NumRd-1:0][Width-1:0]  rdata_o
);
  localparam int unsigned LaneW = Width / Lanes;

  logic [Width-1:0] mem_q [Depth];

  always_ff @(posedge clk_i) begin
    for (int unsigned l = 0; l < Lanes; l++) begin
      if (we_i && wmask_i[l]) mem_q[waddr_i][l*LaneW +: LaneW] <= wdata_i[l*LaneW +: LaneW];
    end
  end

  // Write-first: a read of the row being written returns the newly written lanes.
  for (genvar r = 0; r < NumRd; r++) begin : g_rd
    logic [Width-1:0] rdata_q;
    always_ff @(posedge clk_i) begin
      if (re_i[r]) begin
        rdata_q <= mem_q[raddr_i[r]];
        for (int unsigned l = 0; l < Lanes; l++) begin
          if (we_i && wmask_i[l] && waddr_i == raddr_i[r]) begin
            rdata_q[l*LaneW +: LaneW] <= wdata_i[l*LaneW +: LaneW];
          end
        end
      end
    end
    assign rdata_o[r] = rdata_q;
  end
endmodule : vta_sram
