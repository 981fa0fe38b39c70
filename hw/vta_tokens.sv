// The four dependency-token channels between the stages (ISA reference 5.1, 5.3).
// Channel order (vta_pkg CHAN_*): 0 l2g (load -> compute), 1 g2l (compute -> load),
// 2 g2s (compute -> store), 3 s2g (store -> compute). Each channel is an 8-bit counter that
// starts at 0 after reset and keeps its value across runs. A push is a one-cycle pulse, seen
// by a consumer one cycle later; a pop is a one-cycle pulse and is only issued when the
// count is non-zero. A push into a channel that holds TOKEN_MAX tokens (without a pop in the
// same cycle) is an error (ERR_TOKEN_OVERFLOW); the count then stays at TOKEN_MAX.
module vta_tokens import vta_pkg::*; (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic [3:0]      push_i,
  input  logic [3:0]      pop_i,
  output logic [3:0][7:0] count_o,
  output logic [3:0]      avail_o,     // count_o[c] != 0
  output logic            err_o,       // a push overflowed a channel this cycle
  output logic [1:0]      err_chan_o   // the lowest overflowing channel
);
  logic [3:0][7:0] cnt_q;
  logic [3:0]      ovf;

  // a push into a full channel without a pop in the same cycle overflows (the count stays)
  for (genvar c = 0; c < 4; c++) begin : g_ovf
    assign ovf[c] = push_i[c] && !pop_i[c] && (cnt_q[c] == 8'(TOKEN_MAX));
  end

  always_comb begin
    err_chan_o = 2'd0;
    for (int c = 3; c >= 0; c--) begin
      if (ovf[c]) err_chan_o = 2'(c);
    end
  end

  // A count changes only in a cycle with a push or a pop on its channel (one per instruction),
  // so the counts are updated only in a cycle with any push or pop, under that one enable, and
  // a simulator evaluates no next count in the other cycles.
  // avail_q (count != 0) moves with the count, so the sequencers read a register instead of four
  // compares evaluated every cycle.
  logic [3:0] avail_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cnt_q   <= '0;
      avail_q <= '0;
    end else if ((push_i | pop_i) != '0) begin
      for (int unsigned c = 0; c < 4; c++) begin
        if (push_i[c] && !pop_i[c] && !ovf[c]) begin
          cnt_q[c]   <= cnt_q[c] + 8'd1;
          avail_q[c] <= 1'b1;
        end else if (pop_i[c] && !push_i[c]) begin
          cnt_q[c]   <= cnt_q[c] - 8'd1;
          avail_q[c] <= (cnt_q[c] != 8'd1);
        end
      end
    end
  end

  assign count_o = cnt_q;
  assign err_o   = |ovf;
  assign avail_o = avail_q;
  // an immediate assertion on the clock edge over the values before it (what a concurrent one
  // samples), run only in an edge where the check fails on some channel (see vta_insn_seq): one
  // test of the four channels a cycle, not four
  always_ff @(posedge clk_i) begin
    if (rst_ni && (pop_i & ~avail_o) != '0) begin
      for (int c = 0; c < 4; c++) begin
        PopNeedsToken: assert (!pop_i[c] || avail_o[c])
          else $error("vta_tokens: pop from empty channel %0d", c);
      end
    end
  end
endmodule : vta_tokens
