// Synchronous FIFO with a valid/ready interface on both sides and a fill count.
// The head is available combinationally (first-word fall-through), from a register that holds
// a copy of the head entry: it changes only with a push into an empty FIFO or a pop, so a
// simulator does not index the storage in every cycle.
module vta_fifo #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 4,
  localparam int unsigned PtrW = (Depth > 1) ? $clog2(Depth) : 1,
  localparam int unsigned CntW = $clog2(Depth + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  // write side
  input  logic             wvalid_i,
  output logic             wready_o,
  input  logic [Width-1:0] wdata_i,
  // read side
  output logic             rvalid_o,
  input  logic             rready_i,
  output logic [Width-1:0] rdata_o,
  // number of entries held
  output logic [CntW-1:0]  count_o
);
  logic [Width-1:0] mem_q [Depth];
  logic [Width-1:0] head_q;           // mem_q[rptr_q] while cnt_q != 0
  logic [PtrW-1:0]  wptr_q, rptr_q;
  logic [CntW-1:0]  cnt_q;
  logic             push, pop;

  assign wready_o = (cnt_q != CntW'(Depth));
  assign rvalid_o = (cnt_q != '0);
  assign rdata_o  = head_q;
  assign count_o  = cnt_q;
  assign push     = wvalid_i & wready_o;
  assign pop      = rvalid_o & rready_i;

  function automatic logic [PtrW-1:0] incr(logic [PtrW-1:0] p);
    return (p == PtrW'(Depth - 1)) ? '0 : p + 1'b1;
  endfunction

  // The pointers and the count move only in a cycle with a push or a pop, so they are updated
  // under those enables and a simulator evaluates no next state in the other cycles.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wptr_q <= '0;
      rptr_q <= '0;
      cnt_q  <= '0;
    end else begin
      if (push) wptr_q <= incr(wptr_q);
      if (pop) rptr_q <= incr(rptr_q);
      if (push && !pop) cnt_q <= cnt_q + 1'b1;
      else if (pop && !push) cnt_q <= cnt_q - 1'b1;
    end
  end

  // Storage has no reset (like an SRAM); nor has the head copy, which is read only while the
  // FIFO holds an entry. After a pop the head is the next stored entry, or the entry pushed in
  // the same cycle when the popped one was the last; a push into an empty FIFO is the head.
  always_ff @(posedge clk_i) begin
    if (push) mem_q[wptr_q] <= wdata_i;
    if (pop && cnt_q != CntW'(1)) head_q <= mem_q[incr(rptr_q)];
    else if (push && (cnt_q == '0 || pop)) head_q <= wdata_i;
  end

  // Writes follow valid/ready: a writer held off by a full FIFO keeps offering its entry until
  // it is taken (nothing is dropped: push needs wready). A reader never pops an empty FIFO.
  // Both are immediate assertions on the clock edge, run only in an edge where a check fails,
  // so a simulator keeps no sampled copies (ReadWhenEmpty, a same-cycle implication, as a
  // concurrent assertion cost a sampled copy of its two signals and the check on every edge).
  // WriteHeldWhenFull looks one edge back (write_held_q).
  logic write_held_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) write_held_q <= 1'b0;
    else         write_held_q <= wvalid_i && !wready_o;
  end
  // The checks are computed only in an edge with a held write or a read, inside the clocked
  // process (continuous assignments are computed every cycle).
  always_ff @(posedge clk_i) begin
    if (rst_ni && (write_held_q || rready_i)) begin
      automatic logic write_ok, read_ok;
      write_ok = !write_held_q || wvalid_i;
      read_ok  = !rready_i || rvalid_o;
      if (!(write_ok && read_ok)) begin
        WriteHeldWhenFull: assert (write_ok)
          else $error("vta_fifo: a write offered to a full FIFO was withdrawn before it was taken");
        ReadWhenEmpty: assert (read_ok)
          else $error("vta_fifo: pop from an empty FIFO");
      end
    end
  end
endmodule : vta_fifo
