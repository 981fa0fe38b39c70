// Counts the cycles of a run in which no unit makes progress; fires when the count reaches
// limit_i (0 disables it). The count restarts on every progress cycle and at launch.
module vta_watchdog (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        running_i,
  input  logic        progress_i,
  input  logic [31:0] limit_i,
  output logic        fire_o
);
  logic [31:0] cnt_q, cnt_d;

  always_comb begin
    cnt_d = cnt_q;
    if (!running_i || progress_i) cnt_d = '0;
    else if (cnt_q != limit_i)    cnt_d = cnt_q + 32'd1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cnt_q <= '0;
    else         cnt_q <= cnt_d;
  end

  assign fire_o = running_i && (limit_i != '0) && (cnt_q == limit_i);
endmodule : vta_watchdog
