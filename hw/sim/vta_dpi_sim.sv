// Simulation only: simulation control through DPI.
//
// Every clock edge out of reset the shim counts one simulated cycle (the count it reports).
// The call returns 1 only when the model is clocked outside the shim's entry points, where no
// memory or host model would answer; the simulation then ends with $finish.
module vta_dpi_sim (
  input  logic clk_i,
  input  logic rst_ni
);

  // Count one clock edge; returns 1 when the simulation must end.
  import "DPI-C" function byte unsigned vta_dpi_sim_tick();

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      // nothing to reset: the cycle count lives in the shim
    end else if (vta_dpi_sim_tick() != 8'd0) begin
      $finish;
    end
  end

endmodule
