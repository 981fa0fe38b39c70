// Simulation only: the profiler's probe. While en_i is high (the shim sets it when a run is
// traced), every clock edge hands the shim the unit status the core's counters sample on that
// same edge (state, instruction index, retire), the queue fills, the token counts, the token
// pushes and pops, and the memory beats of the edge. With en_i low it calls nothing.
module vta_dpi_probe (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         en_i,
  input  logic         running_i,   // the core counts this cycle (vta_vcr running_q)
  input  logic [7:0]   state_i,     // 2 bits per unit: fetch, load, compute, store
  input  logic [3:0]   retire_i,
  input  logic [127:0] index_i,     // 32 bits per unit
  input  logic [47:0]  fill_i,      // 16 bits per queue: load, compute, store
  input  logic [31:0]  tokens_i,    // 8 bits per channel
  input  logic [3:0]   push_i,
  input  logic [3:0]   pop_i,
  input  logic [4:0]   rd_beat_i,   // read beat delivered to client 0..4 (fetch, uop, inp, wgt, acc)
  input  logic         wr_beat_i
);

  // flags: [7:0] state, [11:8] retire, [15:12] push, [19:16] pop, [24:20] read beats,
  // [25] write beat, [26] running.
  import "DPI-C" function void vta_dpi_probe_tick(
    input int unsigned      flags,
    input int unsigned      index0,
    input int unsigned      index1,
    input int unsigned      index2,
    input int unsigned      index3,
    input longint unsigned  fill,
    input int unsigned      tokens
  );

  logic [31:0] flags;
  assign flags = {5'd0, running_i, wr_beat_i, rd_beat_i, pop_i, push_i, retire_i, state_i};

  always_ff @(posedge clk_i) begin
    if (rst_ni && en_i) begin
      vta_dpi_probe_tick(flags, index_i[31:0], index_i[63:32], index_i[95:64], index_i[127:96],
                         {16'd0, fill_i}, tokens_i);
    end
  end

endmodule
