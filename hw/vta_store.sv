// Store unit: executes STORE from its queue, one at a time (ISA reference 4.3, DESIGN.md):
// element x of row y is the low OUT_WIDTH bits of every lane of ACC[sram_base + y*x_size + x],
// read when the store executes, written to DRAM element dram_base + y*x_stride + x.
// Tokens: pops g2s (pop_prev_dep) before, pushes s2g (push_prev_dep) after. x_size == 0 is a
// no-op. A source row beyond the acc buffer raises ERR_SRAM_INDEX (FIELD_SRAM_END).
// Each row is written in bursts of at most MAX_BURST_BEATS beats that never cross a
// BURST_BOUNDARY_BYTES boundary; each burst waits for its ack. An element costs one acc read
// cycle plus OUT_ELEM_BYTES / 8 beats.
module vta_store import vta_pkg::*; (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,
  // instruction queue head
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  // tokens
  input  logic                  tok_avail_i,   // g2s
  output logic                  tok_pop_o,     // g2s
  output logic                  tok_push_o,    // s2g
  // acc SRAM read port
  output logic                  acc_re_o,
  output logic [LOG_ACC_BUFF_DEPTH-1:0] acc_raddr_o,
  input  logic [ACC_ELEM_BITS-1:0] acc_rdata_i,
  // write client
  output logic                  wr_req_valid_o,
  input  logic                  wr_req_ready_i,
  output logic [31:0]           wr_req_addr_o,
  output logic [7:0]            wr_req_len_o,
  output logic                  wr_valid_o,
  input  logic                  wr_ready_i,
  output logic [63:0]           wr_data_o,
  output logic                  wr_last_o,
  input  logic                  wr_ack_i,
  // error and status
  output logic                  err_o,
  output logic [7:0]            err_field_o,
  output logic [31:0]           err_value_o,
  output logic [31:0]           err_limit_o,
  output logic [31:0]           err_index_o,
  output logic [1:0]            state_o,
  output logic [31:0]           index_o,
  output logic                  retire_o
);
  localparam int unsigned ElemLog = $clog2(OUT_ELEM_BYTES);
  localparam int unsigned SubLast = OUT_ELEM_BYTES / 8 - 1;
  localparam int unsigned Lanes = BATCH * BLOCK_OUT;

  // the walk over the rows of the instruction being executed (StIdle: none)
  typedef enum logic [2:0] {StIdle, StRow, StReq, StRead, StData, StAck} walk_state_e;
  walk_state_e          walk_q, walk_d;
  logic [INSN_BITS-1:0] insn;
  logic [31:0]          insn_index;

  logic [15:0] x_size, y_size, x_stride, sram_base;
  logic [31:0] dram_base;
  logic [47:0] area_end;
  assign sram_base = insn[MEM_SRAM_BASE_LO +: 16];
  assign dram_base = insn[MEM_DRAM_BASE_LO +: 32];
  assign y_size    = insn[MEM_Y_SIZE_LO +: 16];
  assign x_size    = insn[MEM_X_SIZE_LO +: 16];
  assign x_stride  = insn[MEM_X_STRIDE_LO +: 16];
  assign area_end  = 48'(sram_base) + 48'(x_size) * 48'(y_size);

  // ------------------------------------------------------------------ walk state
  logic [15:0] rows_q, rows_d;          // rows left, the current one included
  logic [31:0] row_addr_q, row_addr_d;  // byte address of the current row
  logic [31:0] addr_q, addr_d;          // byte address of the next burst
  logic [31:0] rem_q, rem_d;            // beats left in the row
  logic [7:0]  blen_q, blen_d;          // beats left in the burst - 1
  logic [31:0] src_q, src_d;            // acc row of the current element
  logic [15:0] sub_q, sub_d;            // beat within the element
  logic        have_q, have_d;          // the element's acc row has been read
  logic [31:0] burst;

  always_comb begin
    burst = 32'(MAX_BURST_BEATS) - 32'(addr_q[6:3]);
    if (rem_q < burst) burst = rem_q;
  end

  // the element being written: low OUT_WIDTH bits of each lane
  logic [OUT_ELEM_BITS-1:0] out_elem;
  for (genvar e = 0; e < Lanes; e++) begin : g_trunc
    assign out_elem[e*OUT_WIDTH +: OUT_WIDTH] = acc_rdata_i[e*ACC_WIDTH +: OUT_WIDTH];
  end

  // ------------------------------------------------------------------ control
  // Decode: an empty rectangle is done at once, a source range beyond the acc buffer fails, any
  // other store starts the walk; it is done at the ack of the last row's last burst.
  logic       decode, exec, start, done, fail, empty, last_ack;
  logic [1:0] tok_pop, tok_push;
  assign empty    = (x_size == '0) || (y_size == '0);
  assign last_ack = (walk_q == StAck) && wr_ack_i && (rem_q == '0) && (rows_q == 16'd1);
  assign done     = (decode && empty) || (exec && last_ack);
  assign fail     = decode && !empty && (area_end > 48'(ACC_BUFF_DEPTH));

  vta_insn_seq #(.UsePrevDep(1'b1), .UseNextDep(1'b0)) u_seq (
    .clk_i,
    .rst_ni,
    .halt_i,
    .q_valid_i,
    .q_ready_o,
    .q_data_i,
    .tok_avail_i  ({1'b0, tok_avail_i}),
    .tok_pop_o    (tok_pop),
    .tok_push_o   (tok_push),
    .insn_o       (insn),
    .insn_index_o (insn_index),
    .decode_o     (decode),
    .start_o      (start),
    .exec_o       (exec),
    .done_i       (done),
    .err_i        (fail),
    .err_o,
    .state_o,
    .index_o,
    .retire_o
  );
  assign tok_pop_o  = tok_pop[0];
  assign tok_push_o = tok_push[0];

  always_comb begin
    walk_d     = walk_q;
    rows_d     = rows_q;
    row_addr_d = row_addr_q;
    addr_d     = addr_q;
    rem_d      = rem_q;
    blen_d     = blen_q;
    src_d      = src_q;
    sub_d      = sub_q;
    have_d     = have_q;
    acc_re_o   = 1'b0;
    wr_req_valid_o = 1'b0;
    wr_valid_o = 1'b0;
    wr_last_o  = 1'b0;
    unique case (walk_q)
      StIdle: begin
        if (start) begin
          rows_d     = y_size;
          row_addr_d = dram_base << ElemLog;
          src_d      = 32'(sram_base);
          sub_d      = '0;
          have_d     = 1'b0;
          walk_d     = StRow;
        end
      end
      StRow: begin
        addr_d  = row_addr_q;
        rem_d   = 32'(x_size) << (ElemLog - 3);
        walk_d = StReq;
      end
      StReq: begin
        wr_req_valid_o = 1'b1;
        if (wr_req_ready_i) begin
          blen_d  = 8'(burst - 32'd1);
          addr_d  = addr_q + (burst << 3);
          rem_d   = rem_q - burst;
          walk_d = have_q ? StData : StRead;
        end
      end
      StRead: begin
        acc_re_o = 1'b1;
        have_d   = 1'b1;
        walk_d  = StData;
      end
      StData: begin
        wr_valid_o = 1'b1;
        wr_last_o  = (blen_q == '0);
        if (wr_ready_i) begin
          blen_d = blen_q - 8'd1;
          if (sub_q == 16'(SubLast)) begin
            sub_d  = '0;
            have_d = 1'b0;
            src_d  = src_q + 32'd1;
          end else begin
            sub_d = sub_q + 16'd1;
          end
          if (blen_q == '0) walk_d = StAck;
          else if (sub_q == 16'(SubLast)) walk_d = StRead;
        end
      end
      StAck: begin
        if (wr_ack_i) begin
          if (rem_q != '0) walk_d = StReq;
          else if (rows_q == 16'd1) walk_d = StIdle;
          else begin
            rows_d     = rows_q - 16'd1;
            row_addr_d = row_addr_q + (32'(x_stride) << ElemLog);
            walk_d     = StRow;
          end
        end
      end
      default: walk_d = StIdle;
    endcase
  end

  assign acc_raddr_o   = src_q[LOG_ACC_BUFF_DEPTH-1:0];
  assign wr_req_addr_o = addr_q;
  assign wr_req_len_o  = 8'(burst - 32'd1);
  assign wr_data_o     = 64'(out_elem >> (32'(sub_q) * 32'd64));

  assign err_field_o = 8'(FIELD_SRAM_END);
  assign err_value_o = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
  assign err_limit_o = ACC_BUFF_DEPTH;
  assign err_index_o = insn_index;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      walk_q     <= StIdle;
      rows_q     <= '0;
      row_addr_q <= '0;
      addr_q     <= '0;
      rem_q      <= '0;
      blen_q     <= '0;
      src_q      <= '0;
      sub_q      <= '0;
      have_q     <= 1'b0;
    end else begin
      walk_q     <= walk_d;
      rows_q     <= rows_d;
      row_addr_q <= row_addr_d;
      addr_q     <= addr_d;
      rem_q      <= rem_d;
      blen_q     <= blen_d;
      src_q      <= src_d;
      sub_q      <= sub_d;
      have_q     <= have_d;
    end
  end

  // the g2s / s2g channels only (the store has no next stage); of the instruction the store
  // reads only the geometry (opcode and flags are the sequencer's)
  logic unused;
  assign unused = ^{tok_pop[1], tok_push[1], insn};

  SourceInRange: assert property (@(posedge clk_i) disable iff (!rst_ni)
      acc_re_o |-> src_q < ACC_BUFF_DEPTH)
    else $error("vta_store: acc read out of range");
  DataHasElement: assert property (@(posedge clk_i) disable iff (!rst_ni)
      wr_valid_o |-> have_q)
    else $error("vta_store: beat without its acc row");
  WalkOnlyInExec: assert property (@(posedge clk_i) disable iff (!rst_ni)
      walk_q != StIdle |-> exec)
    else $error("vta_store: row walk outside the execution of a store");
endmodule : vta_store
