// Fetch: reads the instruction stream in bursts and dispatches it, in program order, to the
// three instruction queues (0 load, 1 compute, 2 store; ISA reference 5.2).
// A burst holds up to 8 instructions (16 beats) and never crosses a 128-byte boundary; the
// instructions of one burst are dispatched, one per cycle, before the next burst is read.
// A full target queue blocks dispatch (head-of-line). An instruction that no unit can execute
// raises ERR_INVALID_INSN with its stream index and stops fetch.
module vta_fetch import vta_pkg::*; (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    launch_i,
  input  logic                    halt_i,
  input  logic [31:0]             insn_addr_i,
  input  logic [31:0]             insn_count_i,
  // read client
  output logic                    req_valid_o,
  input  logic                    req_ready_i,
  output logic [31:0]             req_addr_o,
  output logic [7:0]              req_len_o,
  input  logic                    rsp_valid_i,
  input  logic [63:0]             rsp_data_i,
  // instruction queues: {stream index, instruction}
  output logic [2:0]              q_valid_o,
  input  logic [2:0]              q_ready_i,
  output logic [INSN_BITS+31:0]   q_data_o,
  // error
  output logic                    err_o,
  output logic [7:0]              err_field_o,
  output logic [31:0]             err_value_o,
  output logic [31:0]             err_index_o,
  // status
  output logic [1:0]              state_o,
  output logic [31:0]             index_o,
  output logic                    dispatch_o
);
  localparam int unsigned BufInsns = MAX_BURST_BEATS / 2;

  typedef enum logic [2:0] {FeIdle, FeReq, FeWait, FeDispatch, FeHalted} fe_state_e;
  fe_state_e   state_q, state_d;
  logic [31:0] addr_q, addr_d;      // byte address of the next burst
  logic [31:0] left_q, left_d;      // instructions not yet read
  logic [31:0] index_q, index_d;    // stream index of the next instruction to dispatch
  logic [3:0]  n_q, n_d;            // instructions in the buffer
  logic [3:0]  head_q, head_d;      // next buffer entry to dispatch
  logic [4:0]  beat_q, beat_d;      // beats received for the current burst
  logic [INSN_BITS-1:0] buf_q [BufInsns];
  logic [3:0]  burst_insns;

  always_comb begin
    burst_insns = 4'(BufInsns) - {1'b0, addr_q[6:4]};
    if (left_q < 32'(burst_insns)) burst_insns = left_q[3:0];
  end

  assign req_valid_o = (state_q == FeReq);
  assign req_addr_o  = addr_q;
  assign req_len_o   = 8'({burst_insns, 1'b0} - 5'd1);

  // ------------------------------------------------------------------ decode of the head
  logic [INSN_BITS-1:0] insn;
  logic [2:0]  opcode, mtype, aluop;
  logic [3:0]  deps;
  logic        x_zero, pads_zero;
  logic [1:0]  target;
  logic        invalid;
  logic [7:0]  bad_field;
  logic [31:0] bad_value;

  assign insn      = buf_q[head_q[2:0]];
  assign opcode    = insn[INSN_OPCODE_LO +: 3];
  assign mtype     = insn[MEM_MEMORY_TYPE_LO +: 3];
  assign aluop     = insn[ALU_ALU_OPCODE_LO +: 3];
  assign deps      = insn[INSN_POP_PREV_DEP_LO +: 4];
  assign x_zero    = (insn[MEM_X_SIZE_LO +: MEM_X_SIZE_W] == '0);
  assign pads_zero = (insn[MEM_Y_PAD_0_LO +: 16] == '0);

  always_comb begin
    target    = 2'd1;
    invalid   = 1'b0;
    bad_field = 8'(FIELD_NONE);
    bad_value = '0;
    unique case (32'(opcode))
      OPCODE_LOAD: begin
        if (32'(mtype) == MEM_INP || 32'(mtype) == MEM_WGT) begin
          target = 2'd0;
          // Load-stage instructions have no previous stage: pop_prev / push_prev are invalid.
          if (deps[0] || deps[2]) begin
            invalid = 1'b1; bad_field = 8'(FIELD_DEP_FLAGS); bad_value = 32'(deps);
          end
        end else if (!x_zero && !(32'(mtype) == MEM_UOP || 32'(mtype) == MEM_ACC
                                  || 32'(mtype) == MEM_ACC_8BIT)) begin
          invalid = 1'b1; bad_field = 8'(FIELD_MEMORY_TYPE); bad_value = 32'(mtype);
        end
      end
      OPCODE_STORE: begin
        target = 2'd2;
        if (deps[1] || deps[3]) begin
          invalid = 1'b1; bad_field = 8'(FIELD_DEP_FLAGS); bad_value = 32'(deps);
        end else if (!x_zero && 32'(mtype) != MEM_OUT) begin
          invalid = 1'b1; bad_field = 8'(FIELD_MEMORY_TYPE); bad_value = 32'(mtype);
        end else if (!x_zero && !pads_zero) begin
          invalid = 1'b1; bad_field = 8'(FIELD_PAD); bad_value = 32'(insn[MEM_Y_PAD_0_LO +: 16]);
        end
      end
      OPCODE_GEMM, OPCODE_FINISH: target = 2'd1;
      OPCODE_ALU: begin
        if (32'(aluop) > ALU_MUL) begin
          invalid = 1'b1; bad_field = 8'(FIELD_ALU_OPCODE); bad_value = 32'(aluop);
        end
      end
      default: begin
        invalid = 1'b1; bad_field = 8'(FIELD_OPCODE); bad_value = 32'(opcode);
      end
    endcase
  end

  logic dispatching, can_go;
  assign can_go      = (state_q == FeDispatch) && !invalid && !halt_i;
  assign dispatching = can_go && q_ready_i[target];

  always_comb begin
    q_valid_o = '0;
    if (can_go) q_valid_o[target] = 1'b1;
  end
  assign q_data_o = {index_q, insn};

  // ------------------------------------------------------------------ control
  always_comb begin
    state_d = state_q;
    addr_d  = addr_q;
    left_d  = left_q;
    index_d = index_q;
    n_d     = n_q;
    head_d  = head_q;
    beat_d  = beat_q;
    err_o   = 1'b0;
    unique case (state_q)
      FeIdle: begin
        if (launch_i) begin
          addr_d  = insn_addr_i;
          left_d  = insn_count_i;
          index_d = '0;
          state_d = (insn_count_i == '0) ? FeIdle : FeReq;
        end
      end
      FeReq: begin
        if (halt_i) state_d = FeHalted;
        else if (req_ready_i) begin
          n_d     = burst_insns;
          head_d  = '0;
          beat_d  = '0;
          addr_d  = addr_q + 32'({burst_insns, 4'd0});
          left_d  = left_q - 32'(burst_insns);
          state_d = FeWait;
        end
      end
      FeWait: begin
        if (rsp_valid_i) begin
          beat_d = beat_q + 5'd1;
          if (beat_q + 5'd1 == {n_q, 1'b0}) state_d = FeDispatch;
        end
      end
      FeDispatch: begin
        if (halt_i) state_d = FeHalted;
        else if (invalid) begin
          err_o   = 1'b1;
          state_d = FeHalted;
        end else if (dispatching) begin
          index_d = index_q + 32'd1;
          head_d  = head_q + 4'd1;
          if (head_q + 4'd1 == n_q) state_d = (left_q == '0) ? FeIdle : FeReq;
        end
      end
      FeHalted: state_d = FeHalted;
      default:  state_d = FeIdle;
    endcase
  end

  assign err_field_o = bad_field;
  assign err_value_o = bad_value;
  assign err_index_o = index_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= FeIdle;
      addr_q  <= '0;
      left_q  <= '0;
      index_q <= '0;
      n_q     <= '0;
      head_q  <= '0;
      beat_q  <= '0;
    end else begin
      state_q <= state_d;
      addr_q  <= addr_d;
      left_q  <= left_d;
      index_q <= index_d;
      n_q     <= n_d;
      head_q  <= head_d;
      beat_q  <= beat_d;
    end
  end

  // Instruction buffer: beat 2k is the low word of entry k, beat 2k+1 the high word.
  always_ff @(posedge clk_i) begin
    if (state_q == FeWait && rsp_valid_i) begin
      buf_q[beat_q[3:1]][beat_q[0]*64 +: 64] <= rsp_data_i;
    end
  end

  always_comb begin
    unique case (state_q)
      FeReq, FeWait:  state_o = 2'(STATE_BUSY);
      FeDispatch:     state_o = (can_go && !q_ready_i[target]) ? 2'(STATE_BLOCKED) : 2'(STATE_BUSY);
      default:        state_o = 2'(STATE_IDLE);
    endcase
  end
  assign index_o    = index_q;
  assign dispatch_o = dispatching;

  NoStrayBeat: assert property (@(posedge clk_i) disable iff (!rst_ni)
      rsp_valid_i |-> state_q == FeWait)
    else $error("vta_fetch: instruction beat outside a burst");
  AlignedStart: assert property (@(posedge clk_i) disable iff (!rst_ni)
      launch_i && state_q == FeIdle |-> insn_addr_i[3:0] == 4'd0)
    else $error("vta_fetch: instruction address not 16-byte aligned");
endmodule : vta_fetch
