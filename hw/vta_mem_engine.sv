// Memory engine: puts the read clients onto the one read channel and the store's bursts
// onto the write channel.
// Reads: each client holds a request (valid/ready); the lowest-numbered valid client wins
// (fixed priority: 0 fetch, 1 uop, 2 inp, 3 wgt, 4 acc) and its number is the request id.
// Responses are registered once and routed to the client named by their id. Responses of one
// id arrive in request order; ids may interleave. Clients are always ready for data.
// Writes: a request, then len+1 beats (the last one flagged). The next request is taken in
// the cycle of the previous burst's last beat at the earliest, so bursts stream back to back;
// the memory acknowledges each burst (in order) with a pulse, which is passed back to the
// writer, and no burst waits for the ack of the one before.
module vta_mem_engine import vta_pkg::*; #(
  parameter int unsigned NumRd = 5
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // read clients
  input  logic [NumRd-1:0]       cl_req_valid_i,
  output logic [NumRd-1:0]       cl_req_ready_o,
  input  logic [NumRd-1:0][31:0] cl_req_addr_i,
  input  logic [NumRd-1:0][7:0]  cl_req_len_i,
  output logic [NumRd-1:0]       cl_rsp_valid_o,
  output logic [63:0]            cl_rsp_data_o,
  output logic                   cl_rsp_last_o,
  // write client (the store unit)
  input  logic                   wc_req_valid_i,
  output logic                   wc_req_ready_o,
  input  logic [31:0]            wc_req_addr_i,
  input  logic [7:0]             wc_req_len_i,
  input  logic                   wc_valid_i,
  output logic                   wc_ready_o,
  input  logic [63:0]            wc_data_i,
  input  logic                   wc_last_i,
  output logic                   wc_ack_o,
  // memory read channel
  output logic                   mem_rd_req_valid_o,
  input  logic                   mem_rd_req_ready_i,
  output logic [31:0]            mem_rd_req_addr_o,
  output logic [7:0]             mem_rd_req_len_o,
  output logic [7:0]             mem_rd_req_id_o,
  input  logic                   mem_rd_valid_i,
  input  logic [63:0]            mem_rd_data_i,
  input  logic [7:0]             mem_rd_id_i,
  input  logic                   mem_rd_last_i,
  // memory write channel
  output logic                   mem_wr_req_valid_o,
  input  logic                   mem_wr_req_ready_i,
  output logic [31:0]            mem_wr_req_addr_o,
  output logic [7:0]             mem_wr_req_len_o,
  output logic                   mem_wr_valid_o,
  input  logic                   mem_wr_ready_i,
  output logic [63:0]            mem_wr_data_o,
  output logic [7:0]             mem_wr_strb_o,
  output logic                   mem_wr_last_o,
  input  logic                   mem_wr_ack_i,
  // activity (for the watchdog): a read or write beat moved this cycle
  output logic                   beat_o
);
  // ------------------------------------------------------------------ read arbitration
  logic [7:0]  grant;
  logic        any_req;
  logic [31:0] req_addr;
  logic [7:0]  req_len;

  // The granted client's address and length are selected inside the priority loop, by constant
  // client numbers, and only in a cycle with a request: a simulator then does no work for the
  // request mux in the other cycles (a mux indexed by the grant was evaluated on every edge).
  always_comb begin
    grant    = 8'd0;
    any_req  = 1'b0;
    req_addr = '0;
    req_len  = '0;
    if (cl_req_valid_i != '0) begin
      for (int c = NumRd - 1; c >= 0; c--) begin
        if (cl_req_valid_i[c]) begin
          grant    = 8'(c);
          any_req  = 1'b1;
          req_addr = cl_req_addr_i[c];
          req_len  = cl_req_len_i[c];
        end
      end
    end
  end

  assign mem_rd_req_valid_o = any_req;
  assign mem_rd_req_addr_o  = req_addr;
  assign mem_rd_req_len_o   = req_len;
  assign mem_rd_req_id_o    = grant;

  always_comb begin
    cl_req_ready_o = '0;
    if (any_req) cl_req_ready_o[grant[$clog2(NumRd)-1:0]] = mem_rd_req_ready_i;
  end

  // ------------------------------------------------------------------ read responses
  logic        rsp_valid_q, rsp_valid_d, rsp_last_q, rsp_last_d;
  logic [7:0]  rsp_id_q, rsp_id_d;
  logic [63:0] rsp_data_q, rsp_data_d;

  always_comb begin
    rsp_valid_d = mem_rd_valid_i;
    rsp_id_d    = mem_rd_id_i;
    rsp_last_d  = mem_rd_last_i;
    rsp_data_d  = mem_rd_data_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rsp_valid_q <= 1'b0;
      rsp_id_q    <= '0;
      rsp_last_q  <= 1'b0;
      rsp_data_q  <= '0;
    end else begin
      rsp_valid_q <= rsp_valid_d;
      // id, last and data are read only with rsp_valid_q: kept only for a beat
      if (rsp_valid_d) begin
        rsp_id_q   <= rsp_id_d;
        rsp_last_q <= rsp_last_d;
        rsp_data_q <= rsp_data_d;
      end
    end
  end

  for (genvar c = 0; c < NumRd; c++) begin : g_route
    assign cl_rsp_valid_o[c] = rsp_valid_q && (rsp_id_q == 8'(c));
  end
  assign cl_rsp_data_o = rsp_data_q;
  assign cl_rsp_last_o = rsp_last_q;

  // ------------------------------------------------------------------ writes
  logic       wr_open_q, wr_open_d;   // a burst is accepted and its last beat not yet sent
  logic       last_fire, wreq_ok, wreq_fire;
  logic [7:0] wr_acks_q, wr_acks_d;   // bursts sent in full, not yet acknowledged

  assign last_fire          = wr_open_q && wc_valid_i && mem_wr_ready_i && wc_last_i;
  assign wreq_ok            = !wr_open_q || last_fire;
  assign mem_wr_req_valid_o = wc_req_valid_i && wreq_ok;
  assign wc_req_ready_o     = mem_wr_req_ready_i && wreq_ok;
  assign wreq_fire          = mem_wr_req_valid_o && mem_wr_req_ready_i;
  assign mem_wr_valid_o     = wr_open_q && wc_valid_i;
  assign wc_ready_o         = wr_open_q && mem_wr_ready_i;
  assign wc_ack_o           = mem_wr_ack_i;

  always_comb begin
    wr_open_d = wr_open_q;
    if (wreq_fire) wr_open_d = 1'b1;
    else if (last_fire) wr_open_d = 1'b0;
    wr_acks_d = wr_acks_q + (last_fire ? 8'd1 : 8'd0) - (mem_wr_ack_i ? 8'd1 : 8'd0);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_open_q <= 1'b0;
      wr_acks_q <= '0;
    end else begin
      wr_open_q <= wr_open_d;
      wr_acks_q <= wr_acks_d;
    end
  end

  assign mem_wr_req_addr_o = wc_req_addr_i;
  assign mem_wr_req_len_o  = wc_req_len_i;
  assign mem_wr_data_o     = wc_data_i;
  assign mem_wr_strb_o     = 8'hFF;
  assign mem_wr_last_o     = wc_last_i;

  assign beat_o = rsp_valid_q || (mem_wr_valid_o && mem_wr_ready_i);

  // ------------------------------------------------------------------ checks
  // Same-cycle implications over the values before the clock edge (what a concurrent assertion
  // samples), as immediate assertions on the clock edge. Each check is about one event (a read
  // response, a read request, a write request, a write ack) and is evaluated only in an edge with
  // that event, so a cycle with only a read beat (most of a load) tests the response's id and
  // nothing else, and a cycle with none of them (most of a GEMM) one condition; a labelled
  // assertion runs only in an edge where its check fails (a simulator then evaluates each check
  // once and copies no sampled values).
  always_ff @(posedge clk_i) begin
    if (rst_ni && (mem_rd_valid_i || mem_rd_req_valid_o || mem_wr_req_valid_o || mem_wr_ack_i)) begin
      if (mem_rd_valid_i) begin
        automatic logic id_ok;
        id_ok = mem_rd_id_i < 8'(NumRd);
        if (!id_ok) begin
          RdIdKnown: assert (id_ok)
            else $error("vta_mem_engine: read response with unknown id %0d", mem_rd_id_i);
        end
      end
      if (mem_rd_req_valid_o) begin
        automatic logic aligned_ok, cross_ok;
        aligned_ok = mem_rd_req_addr_o[2:0] == 3'd0;
        cross_ok   = ({1'b0, mem_rd_req_addr_o[6:3]} + {1'b0, mem_rd_req_len_o[3:0]} < 5'd16)
                  && (mem_rd_req_len_o < 8'(MAX_BURST_BEATS));
        if (!(aligned_ok && cross_ok)) begin
          RdReqAligned: assert (aligned_ok)
            else $error("vta_mem_engine: unaligned read address");
          RdReqNoCross: assert (cross_ok)
            else $error("vta_mem_engine: read burst crosses a %0d-byte boundary", BURST_BOUNDARY_BYTES);
        end
      end
      if (mem_wr_req_valid_o) begin
        automatic logic ok;
        ok = ({1'b0, mem_wr_req_addr_o[6:3]} + {1'b0, mem_wr_req_len_o[3:0]} < 5'd16)
          && (mem_wr_req_len_o < 8'(MAX_BURST_BEATS)) && (mem_wr_req_addr_o[2:0] == 3'd0);
        if (!ok) begin
          WrReqNoCross: assert (ok)
            else $error("vta_mem_engine: bad write burst");
        end
      end
      if (mem_wr_ack_i && wr_acks_q == '0) begin
        AckOnlyForSentBurst: assert (wr_acks_q != '0)
          else $error("vta_mem_engine: write ack without a completed burst");
      end
    end
  end
endmodule : vta_mem_engine
