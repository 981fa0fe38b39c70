// The second half of the two-writer accumulator memory of the option COMPUTE_OVERLAP. Port 0 (the
// GEMM lane) writes the top level's u_acc (bank 0), port 1 (the ALU / LOAD lane) writes this
// module's bank 1, in the same cycle if they like; every read port reads both banks. A
// live-value table, one bit per row and 64-bit lane, says which bank wrote it last; a read
// returns, one cycle later and lane by lane, the bank the table names, the table updated before
// it is sampled (write-first, as vta_sram). The two ports never write the same row and lane in
// one cycle (the compute unit's hazard check keeps their footprints apart).
module vta_acc_lvt #(
  parameter int unsigned Width = 64,
  parameter int unsigned Depth = 16,
  parameter int unsigned Lanes = 1,
  parameter int unsigned NumRd = 1,
  localparam int unsigned AddrW = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic                         clk_i,
  input  logic [1:0]                   we_i,
  input  logic [1:0][Lanes-1:0]        wmask_i,
  input  logic [1:0][AddrW-1:0]        waddr_i,
  input  logic [Width-1:0]             wdata1_i,       // port 1's data (port 0's goes to bank 0)
  input  logic [NumRd-1:0]             re_i,
  input  logic [NumRd-1:0][AddrW-1:0]  raddr_i,
  input  logic [NumRd-1:0][Width-1:0]  bank0_rdata_i,  // bank 0's read data (the same ports)
  output logic [NumRd-1:0][Width-1:0]  rdata_o
);
  localparam int unsigned LaneW = Width / Lanes;

  logic [NumRd-1:0][Width-1:0] bank1_rdata;
  vta_sram #(.Width(Width), .Depth(Depth), .Lanes(Lanes), .NumRd(NumRd)) u_bank (
    .clk_i,
    .we_i    (we_i[1]),
    .wmask_i (wmask_i[1]),
    .waddr_i (waddr_i[1]),
    .wdata_i (wdata1_i),
    .re_i,
    .raddr_i,
    .rdata_o (bank1_rdata)
  );

  // Live-value table, written before it is read in the same clocked process (see vta_sram).
  logic [Lanes-1:0] lvt_q [Depth];
  logic [NumRd-1:0][Lanes-1:0] sel_q;
  /* verilator lint_off BLKSEQ */
  always_ff @(posedge clk_i) begin
    if (we_i[0]) lvt_q[waddr_i[0]] = lvt_q[waddr_i[0]] & ~wmask_i[0];
    if (we_i[1]) lvt_q[waddr_i[1]] = lvt_q[waddr_i[1]] | wmask_i[1];
    for (int unsigned r = 0; r < NumRd; r++) begin
      if (re_i[r]) sel_q[r] <= lvt_q[raddr_i[r]];
    end
  end
  /* verilator lint_on BLKSEQ */

  for (genvar r = 0; r < NumRd; r++) begin : g_rd
    for (genvar l = 0; l < Lanes; l++) begin : g_lane
      assign rdata_o[r][l*LaneW +: LaneW] = sel_q[r][l] ? bank1_rdata[r][l*LaneW +: LaneW]
                                                         : bank0_rdata_i[r][l*LaneW +: LaneW];
    end
  end

  // (every row starts in bank 0, which the core's first writes of a row then override)
  initial begin
    for (int unsigned i = 0; i < Depth; i++) lvt_q[i] = '0;
  end

  logic same_ok;
  assign same_ok = !(we_i[0] && we_i[1] && waddr_i[0] == waddr_i[1] && (wmask_i[0] & wmask_i[1]) != '0);
  always_ff @(posedge clk_i) begin
    if (!same_ok) begin
      OneWriterPerLane: assert (same_ok)
        else $error("vta_acc_lvt: both ports write one row and lane in the same cycle");
    end
  end
endmodule : vta_acc_lvt
