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
  // A write of a whole row stores it at once; the lanes of any other write are tested in groups
  // of GroupLanes: a write of one lane of a wide row (the load unit's 64-bit beats into the
  // 32-lane weight rows) tests the groups and then the lanes of one group, not every lane.
  localparam int unsigned GroupLanes = (Lanes > 8) ? 8 : Lanes;
  localparam int unsigned Groups = Lanes / GroupLanes;
  localparam int unsigned R1 = (NumRd > 1) ? 1 : 0;
  localparam int unsigned R2 = (NumRd > 2) ? 2 : 0;
  localparam int unsigned R3 = (NumRd > 3) ? 3 : 0;

  logic [Width-1:0] mem_q [Depth];
  logic [NumRd-1:0][Width-1:0] rdata_q;

  // Everything happens on the clock edge and only for an active port, so a simulator does no
  // work for idle ports (a combinational merge and read mux would be evaluated every cycle,
  // which for the 2048-bit weight rows dominated tsim's time). A write stores only its enabled
  // lanes, in place: the storage is written with blocking assignments before the read ports
  // sample it, which is exactly write-first (a read of the row being written sees the new
  // lanes) and costs a simulator one lane per write instead of copying, merging and committing
  // the whole row (a 2048-bit weight row for every 64-bit beat the load unit delivered). No
  // other process reads mem_q, so blocking writes in this clocked process are not observable
  // as such: every reader sees the state after the edge, as with non-blocking ones.

  // Waiver: mem_q is written and read by this process only, writes before reads (see above).
  /* verilator lint_off BLKSEQ */
  always_ff @(posedge clk_i) begin
    if (we_i && wmask_i == '1) begin
      mem_q[waddr_i] = wdata_i;  // a whole row (the compute unit's results, zero padding)
    end else if (we_i) begin
      for (int unsigned g = 0; g < Groups; g++) begin
        if (wmask_i[g*GroupLanes +: GroupLanes] != '0) begin
          for (int unsigned l = g * GroupLanes; l < (g + 1) * GroupLanes; l++) begin
            if (wmask_i[l]) mem_q[waddr_i][l*LaneW +: LaneW] = wdata_i[l*LaneW +: LaneW];
          end
        end
      end
    end
    // Each port with a constant index (R1, R2, R3 alias port 0 when there are fewer ports and are
    // then never used): a port indexed by a loop variable is copied twice by Verilator, through
    // a bounds-checked temporary, on every read.
    if (re_i[0]) rdata_q[0] <= mem_q[raddr_i[0]];
    if (NumRd > 1 && re_i[R1]) rdata_q[R1] <= mem_q[raddr_i[R1]];
    if (NumRd > 2 && re_i[R2]) rdata_q[R2] <= mem_q[raddr_i[R2]];
    if (NumRd > 3 && re_i[R3]) rdata_q[R3] <= mem_q[raddr_i[R3]];
  end
  /* verilator lint_on BLKSEQ */

  assign rdata_o = rdata_q;

  initial begin
    if (Width % Lanes != 0) $fatal(1, "vta_sram: Width %0d is not a multiple of Lanes %0d", Width, Lanes);
    if (NumRd < 1 || NumRd > 4) $fatal(1, "vta_sram: NumRd %0d is not 1 to 4", NumRd);
    if (Lanes % GroupLanes != 0) $fatal(1, "vta_sram: Lanes %0d is not a multiple of 8", Lanes);
  end
endmodule : vta_sram
