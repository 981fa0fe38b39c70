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

  typedef enum logic [3:0] {StIdle, StCheck, StRow, StReq, StRead, StData, StAck, StDone, StHalted}
    st_state_e;
  st_state_e            state_q, state_d;
  logic [INSN_BITS-1:0] insn_q, insn_d;
  logic [31:0]          index_q, index_d;

  logic [INSN_BITS-1:0] head;
  logic [31:0]          head_index;
  assign head       = q_data_i[INSN_BITS-1:0];
  assign head_index = q_data_i[INSN_BITS +: 32];

  logic [15:0] x_size, y_size, x_stride, sram_base;
  logic [31:0] dram_base;
  logic [47:0] area_end;
  assign sram_base = insn_q[MEM_SRAM_BASE_LO +: 16];
  assign dram_base = insn_q[MEM_DRAM_BASE_LO +: 32];
  assign y_size    = insn_q[MEM_Y_SIZE_LO +: 16];
  assign x_size    = insn_q[MEM_X_SIZE_LO +: 16];
  assign x_stride  = insn_q[MEM_X_STRIDE_LO +: 16];
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

  logic pop_ok;
  assign pop_ok = !head[INSN_POP_PREV_DEP_LO] || tok_avail_i;

  always_comb begin
    state_d    = state_q;
    insn_d     = insn_q;
    index_d    = index_q;
    rows_d     = rows_q;
    row_addr_d = row_addr_q;
    addr_d     = addr_q;
    rem_d      = rem_q;
    blen_d     = blen_q;
    src_d      = src_q;
    sub_d      = sub_q;
    have_d     = have_q;
    tok_pop_o  = 1'b0;
    tok_push_o = 1'b0;
    q_ready_o  = 1'b0;
    retire_o   = 1'b0;
    err_o      = 1'b0;
    acc_re_o   = 1'b0;
    wr_req_valid_o = 1'b0;
    wr_valid_o = 1'b0;
    wr_last_o  = 1'b0;
    unique case (state_q)
      StIdle: begin
        if (q_valid_i && !halt_i && pop_ok) begin
          tok_pop_o = head[INSN_POP_PREV_DEP_LO];
          insn_d    = head;
          index_d   = head_index;
          state_d   = StCheck;
        end
      end
      StCheck: begin
        if (x_size == '0 || y_size == '0) state_d = StDone;
        else if (area_end > 48'(ACC_BUFF_DEPTH)) begin
          err_o   = 1'b1;
          state_d = StHalted;
        end else begin
          rows_d     = y_size;
          row_addr_d = dram_base << ElemLog;
          src_d      = 32'(sram_base);
          sub_d      = '0;
          have_d     = 1'b0;
          state_d    = StRow;
        end
      end
      StRow: begin
        addr_d  = row_addr_q;
        rem_d   = 32'(x_size) << (ElemLog - 3);
        state_d = StReq;
      end
      StReq: begin
        wr_req_valid_o = 1'b1;
        if (wr_req_ready_i) begin
          blen_d  = 8'(burst - 32'd1);
          addr_d  = addr_q + (burst << 3);
          rem_d   = rem_q - burst;
          state_d = have_q ? StData : StRead;
        end
      end
      StRead: begin
        acc_re_o = 1'b1;
        have_d   = 1'b1;
        state_d  = StData;
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
          if (blen_q == '0) state_d = StAck;
          else if (sub_q == 16'(SubLast)) state_d = StRead;
        end
      end
      StAck: begin
        if (wr_ack_i) begin
          if (rem_q != '0) state_d = StReq;
          else if (rows_q == 16'd1) state_d = StDone;
          else begin
            rows_d     = rows_q - 16'd1;
            row_addr_d = row_addr_q + (32'(x_stride) << ElemLog);
            state_d    = StRow;
          end
        end
      end
      StDone: begin
        tok_push_o = insn_q[INSN_PUSH_PREV_DEP_LO];
        q_ready_o  = 1'b1;
        retire_o   = 1'b1;
        state_d    = StIdle;
      end
      StHalted: state_d = StHalted;
      default:  state_d = StIdle;
    endcase
  end

  assign acc_raddr_o   = src_q[LOG_ACC_BUFF_DEPTH-1:0];
  assign wr_req_addr_o = addr_q;
  assign wr_req_len_o  = 8'(burst - 32'd1);
  assign wr_data_o     = 64'(out_elem >> (32'(sub_q) * 32'd64));

  assign err_field_o = 8'(FIELD_SRAM_END);
  assign err_value_o = (area_end > 48'hFFFF_FFFF) ? 32'hFFFF_FFFF : area_end[31:0];
  assign err_limit_o = ACC_BUFF_DEPTH;
  assign err_index_o = index_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q    <= StIdle;
      insn_q     <= '0;
      index_q    <= '0;
      rows_q     <= '0;
      row_addr_q <= '0;
      addr_q     <= '0;
      rem_q      <= '0;
      blen_q     <= '0;
      src_q      <= '0;
      sub_q      <= '0;
      have_q     <= 1'b0;
    end else begin
      state_q    <= state_d;
      insn_q     <= insn_d;
      index_q    <= index_d;
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

  always_comb begin
    unique case (state_q)
      StIdle:   state_o = !q_valid_i ? 2'(STATE_IDLE)
                        : (!pop_ok ? 2'(STATE_WAIT_TOKEN) : 2'(STATE_BUSY));
      StHalted: state_o = 2'(STATE_IDLE);
      default:  state_o = 2'(STATE_BUSY);
    endcase
  end
  assign index_o = (state_q == StIdle) ? head_index : index_q;

  SourceInRange: assert property (@(posedge clk_i) disable iff (!rst_ni)
      acc_re_o |-> src_q < ACC_BUFF_DEPTH)
    else $error("vta_store: acc read out of range");
  DataHasElement: assert property (@(posedge clk_i) disable iff (!rst_ni)
      wr_valid_o |-> have_q)
    else $error("vta_store: beat without its acc row");
endmodule : vta_store
