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
  logic [3:0][7:0] cnt_q, cnt_d;
  logic [3:0]      ovf;

  always_comb begin
    cnt_d = cnt_q;
    ovf   = '0;
    for (int unsigned c = 0; c < 4; c++) begin
      unique case ({push_i[c], pop_i[c]})
        2'b10: begin
          if (cnt_q[c] == 8'(TOKEN_MAX)) ovf[c] = 1'b1;
          else cnt_d[c] = cnt_q[c] + 8'd1;
        end
        2'b01:   cnt_d[c] = cnt_q[c] - 8'd1;
        default: cnt_d[c] = cnt_q[c];
      endcase
    end
  end

  always_comb begin
    err_chan_o = 2'd0;
    for (int c = 3; c >= 0; c--) begin
      if (ovf[c]) err_chan_o = 2'(c);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cnt_q <= '0;
    else         cnt_q <= cnt_d;
  end

  assign count_o = cnt_q;
  assign err_o   = |ovf;
  for (genvar c = 0; c < 4; c++) begin : g_avail
    assign avail_o[c] = (cnt_q[c] != 8'd0);
    // an immediate assertion on the clock edge over the values before it (what a concurrent
    // one samples), run only in an edge where the check fails (see vta_insn_seq)
    always_ff @(posedge clk_i) begin
      if (rst_ni && pop_i[c] && !avail_o[c]) begin
        PopNeedsToken: assert (!pop_i[c] || avail_o[c])
          else $error("vta_tokens: pop from empty channel %0d", c);
      end
    end
  end
endmodule : vta_tokens
