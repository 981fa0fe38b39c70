// Accumulator memory with two write ports (option COMPUTE_OVERLAP): the GEMM lane writes port 0,
// the other lane (ALU results, LOAD ACC beats and pads) port 1, in the same cycle if they like.
// Two vta_sram banks of the whole depth, one per write port, each read by every read port, and a
// live-value table: one bit per row and 64-bit lane saying which bank wrote it last. A read
// returns, one cycle later and lane by lane, the bank the table names, with the table updated
// before it is sampled (write-first, as vta_sram). The two ports never write the same row and
// lane in one cycle (the compute unit's hazard check keeps their footprints apart).
module vta_acc2w #(
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
  input  logic [1:0][Width-1:0]        wdata_i,
  input  logic [NumRd-1:0]             re_i,
  input  logic [NumRd-1:0][AddrW-1:0]  raddr_i,
  output logic [NumRd-1:0][Width-1:0]  rdata_o
);
  localparam int unsigned LaneW = Width / Lanes;

  logic [1:0][NumRd-1:0][Width-1:0] bank_rdata;
  for (genvar b = 0; b < 2; b++) begin : g_bank
    vta_sram #(.Width(Width), .Depth(Depth), .Lanes(Lanes), .NumRd(NumRd)) u_bank (
      .clk_i,
      .we_i    (we_i[b]),
      .wmask_i (wmask_i[b]),
      .waddr_i (waddr_i[b]),
      .wdata_i (wdata_i[b]),
      .re_i    (re_i),
      .raddr_i (raddr_i),
      .rdata_o (bank_rdata[b])
    );
  end

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
      assign rdata_o[r][l*LaneW +: LaneW] = sel_q[r][l] ? bank_rdata[1][r][l*LaneW +: LaneW]
                                                         : bank_rdata[0][r][l*LaneW +: LaneW];
    end
  end

  initial begin
    for (int unsigned i = 0; i < Depth; i++) lvt_q[i] = '0;
  end

  logic same_ok;
  assign same_ok = !(we_i[0] && we_i[1] && waddr_i[0] == waddr_i[1] && (wmask_i[0] & wmask_i[1]) != '0);
  always_ff @(posedge clk_i) begin
    if (!same_ok) begin
      OneWriterPerLane: assert (same_ok)
        else $error("vta_acc2w: both ports write one row and lane in the same cycle");
    end
  end
endmodule : vta_acc2w
