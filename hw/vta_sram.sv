// Synchronous single-write-port RAM with NumRd read ports and Lanes write-enable lanes.
// A read returns, one cycle later, the word as it is after any write of the same cycle
// (write-first), so a read issued in the cycle of a write to the same row sees the new data.
// Contents are not reset and persist across runs, as in the hardware.
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
  logic [NumRd-1:0][Width-1:0] rdata_q;

  // Everything happens on the clock edge and only for an active port, so a simulator does no
  // work for idle ports (a combinational merge and read mux would be evaluated every cycle,
  // which for the 2048-bit weight rows dominated tsim's time). The merged word is a module-level
  // variable written with blocking assignments, not a function's local: Verilator clears every
  // wide local of a clocked process on every edge, active or not.
  // The word after this cycle's write: the old word with the enabled lanes replaced.
  logic [Width-1:0] word;

  // Waiver: `word` is a scratch variable of this process only (written before it is read, in
  // the same edge), so blocking assignments are intended.
  /* verilator lint_off BLKSEQ */
  always_ff @(posedge clk_i) begin
    if (we_i) begin
      word = mem_q[waddr_i];
      for (int unsigned l = 0; l < Lanes; l++) begin
        if (wmask_i[l]) word[l*LaneW +: LaneW] = wdata_i[l*LaneW +: LaneW];
      end
      mem_q[waddr_i] <= word;
    end
    for (int unsigned r = 0; r < NumRd; r++) begin
      if (re_i[r]) rdata_q[r] <= (we_i && raddr_i[r] == waddr_i) ? word : mem_q[raddr_i[r]];
    end
  end
  /* verilator lint_on BLKSEQ */

  assign rdata_o = rdata_q;

  initial begin
    if (Width % Lanes != 0) $fatal(1, "vta_sram: Width %0d is not a multiple of Lanes %0d", Width, Lanes);
  end
endmodule : vta_sram
