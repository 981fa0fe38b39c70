// Fetch: reads the instruction stream in bursts and dispatches it, in program order, to the
// three instruction queues (0 load, 1 compute, 2 store; ISA reference 5.2).
// Reading and dispatching overlap: the instructions go through a buffer of BufInsns entries,
// and the next burst is requested as soon as the buffer has room for it (counting the
// instructions of the bursts still in flight), while the buffered ones are dispatched, one per
// cycle. A burst holds up to 8 instructions (16 beats) and never crosses a 128-byte boundary.
// On an instruction-bound stream fetch therefore runs at the bus rate (2 beats, so 2 cycles,
// per instruction with a memory that delivers a beat per cycle).
// A full target queue blocks dispatch (head-of-line); fetch then stops requesting once the
// buffer is full. An instruction that no unit can execute raises ERR_INVALID_INSN with its
// stream index and stops fetch (beats still in flight are dropped).
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
  localparam int unsigned BurstInsns = MAX_BURST_BEATS / 2;
  localparam int unsigned BufInsns = 2 * BurstInsns;
  localparam int unsigned PtrW = $clog2(BufInsns);
  localparam int unsigned CntW = PtrW + 1;

  typedef enum logic [1:0] {FeIdle, FeRun, FeHalted} fe_state_e;
  fe_state_e   state_q;
  logic [31:0] addr_q;              // byte address of the next burst
  logic [31:0] left_q;              // instructions not yet requested
  logic [31:0] index_q;             // stream index of the next instruction to dispatch
  logic [CntW-1:0] cnt_q;           // instructions in the buffer
  logic [CntW-1:0] fly_q;           // instructions requested, not yet in the buffer
  logic [PtrW-1:0] rptr_q, wptr_q;  // buffer head, next entry to fill
  logic        half_q;              // the low beat of the next instruction has arrived
  logic [63:0] low_q;               // that low beat
  logic [INSN_BITS-1:0] buf_q [BufInsns];
  logic [3:0]  burst_insns;
  logic [3:0]  burst_insns_q;      // burst_len(addr_q[6:4], left_q)
  logic        req_fire, insn_in, running;

  // Instructions of the next burst (blk: the address's instruction within its burst boundary):
  // those left, at most up to the boundary. burst_insns_q is a register written with addr_q and
  // left_q (so it always equals this function of them), which a simulator computes only when
  // they change.
  function automatic logic [3:0] burst_len(logic [2:0] blk, logic [31:0] left);
    logic [3:0] n;
    n = 4'(BurstInsns) - {1'b0, blk};
    return (left < 32'(n)) ? left[3:0] : n;
  endfunction

  assign burst_insns = burst_insns_q;

  assign running     = (state_q == FeRun) && !halt_i;
  assign req_valid_o = running && (left_q != '0)
                    && (32'(cnt_q) + 32'(fly_q) + 32'(burst_insns) <= 32'(BufInsns));
  assign req_addr_o  = addr_q;
  assign req_len_o   = 8'({burst_insns, 1'b0} - 5'd1);
  assign req_fire    = req_valid_o && req_ready_i;
  // the high beat of an instruction completes it
  assign insn_in     = rsp_valid_i && half_q && (state_q == FeRun);

  // ------------------------------------------------------------------ decode of the head
  logic [INSN_BITS-1:0] insn;
  logic [2:0]  opcode, mtype, aluop;
  logic [3:0]  deps;
  logic        x_zero, pads_zero;
  logic [1:0]  target;
  logic        invalid;
  logic [7:0]  bad_field;
  logic [31:0] bad_value;

  assign insn      = buf_q[rptr_q];
  assign opcode    = insn[INSN_OPCODE_LO +: 3];
  assign mtype     = insn[MEM_MEMORY_TYPE_LO +: 3];
  assign aluop     = insn[ALU_ALU_OPCODE_LO +: 3];
  assign deps      = insn[INSN_POP_PREV_DEP_LO +: 4];
  assign x_zero    = (insn[MEM_X_SIZE_LO +: MEM_X_SIZE_W] == '0);
  assign pads_zero = (insn[MEM_Y_PAD_0_LO +: 16] == '0);

  // the head is decoded only while there is one (the buffer is not empty in FeRun): the decode
  // and the error fields are read only then (by dispatch, and by the error, which fetch raises
  // only from FeRun with a buffered head), so an idle fetch evaluates none of it
  logic has_head;
  assign has_head = (state_q == FeRun) && (cnt_q != '0);
  always_comb begin
    target    = 2'd1;
    invalid   = 1'b0;
    bad_field = 8'(FIELD_NONE);
    bad_value = '0;
    if (has_head) unique case (32'(opcode))
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
        // REQ exists only with the hardware option ALU_REQUANT, MOV only with ALU_MOV
        if (32'(aluop) > ALU_MUL && !((ALU_REQUANT != 0) && 32'(aluop) == ALU_REQ)
            && !((ALU_MOV != 0) && 32'(aluop) == ALU_OPCODE_MOV)) begin
          invalid = 1'b1; bad_field = 8'(FIELD_ALU_OPCODE); bad_value = 32'(aluop);
        end
      end
      default: begin
        invalid = 1'b1; bad_field = 8'(FIELD_OPCODE); bad_value = 32'(opcode);
      end
    endcase
  end

  logic dispatching, can_go;
  assign can_go      = running && (cnt_q != '0) && !invalid;
  assign dispatching = can_go && q_ready_i[target];

  always_comb begin
    q_valid_o = '0;
    if (can_go) q_valid_o[target] = 1'b1;
  end
  assign q_data_o = {index_q, insn};

  // ------------------------------------------------------------------ control
  // The next state is written in the clocked process below, per state, so a simulator evaluates
  // only the branch of the current state (logic outside a clocked process is evaluated every
  // cycle).
  logic [CntW-1:0] fly_in, cnt_out;
  logic            drained;
  assign err_o   = (state_q == FeRun) && !halt_i && (cnt_q != '0) && invalid;
  assign fly_in  = req_fire ? CntW'(burst_insns) : '0;
  assign cnt_out = dispatching ? CntW'(1) : '0;
  // after this cycle nothing is left to request, in flight or buffered
  assign drained = (left_q == (req_fire ? 32'(burst_insns) : '0))
                && (fly_q + fly_in - (insn_in ? CntW'(1) : '0) == '0)
                && (cnt_q + (insn_in ? CntW'(1) : '0) - cnt_out == '0);

  assign err_field_o = bad_field;
  assign err_value_o = bad_value;
  assign err_index_o = index_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= FeIdle;
      addr_q  <= '0;
      left_q  <= '0;
      burst_insns_q <= '0;
      index_q <= '0;
      cnt_q   <= '0;
      fly_q   <= '0;
      rptr_q  <= '0;
      wptr_q  <= '0;
      half_q  <= 1'b0;
      low_q   <= '0;
    end else begin
      // FeRun comes first and reads the registers it needs, into automatic copies, before any
      // of them is assigned: a simulator then updates them in place (Verilator keeps a shadow
      // copy of a register read after an assignment to it in its process, copied in and back
      // every cycle). The other states read none.
      unique case (state_q)
        FeRun: begin
          automatic logic [31:0]     addr     = addr_q;
          automatic logic [31:0]     left     = left_q;
          automatic logic [31:0]     index    = index_q;
          automatic logic [CntW-1:0] cnt      = cnt_q;
          automatic logic [CntW-1:0] fly      = fly_q;
          automatic logic [PtrW-1:0] rptr     = rptr_q;
          automatic logic [PtrW-1:0] wptr     = wptr_q;
          automatic logic            half     = half_q;
          automatic logic [3:0]      nins     = burst_insns;
          automatic logic            stop     = halt_i || err_o;
          automatic logic            take_req = req_fire;
          automatic logic            take_ins = insn_in;
          automatic logic            disp     = dispatching;
          automatic logic            done     = drained;
          automatic logic [CntW-1:0] fly_add  = fly_in;
          automatic logic [CntW-1:0] cnt_sub  = cnt_out;
          if (stop) begin
            state_q <= FeHalted;
          end else begin
            if (take_req) begin
              automatic logic [31:0] addr1 = addr + 32'({nins, 4'd0});
              automatic logic [31:0] left1 = left - 32'(nins);
              addr_q        <= addr1;
              left_q        <= left1;
              burst_insns_q <= burst_len(addr1[6:4], left1);
            end
            fly_q <= fly + fly_add - (take_ins ? CntW'(1) : '0);
            cnt_q <= cnt + (take_ins ? CntW'(1) : '0) - cnt_sub;
            if (disp) index_q <= index + 32'd1;
            if (done) state_q <= FeIdle;
          end
          if (disp) rptr_q <= rptr + PtrW'(1);
          if (take_ins) wptr_q <= wptr + PtrW'(1);
          if (rsp_valid_i) begin
            half_q <= !half;
            if (!half) low_q <= rsp_data_i;
          end
        end
        FeIdle: begin
          rptr_q <= '0;
          wptr_q <= '0;
          half_q <= 1'b0;
          if (launch_i) begin
            addr_q  <= insn_addr_i;
            left_q  <= insn_count_i;
            burst_insns_q <= burst_len(insn_addr_i[6:4], insn_count_i);
            index_q <= '0;
            state_q <= (insn_count_i == '0) ? FeIdle : FeRun;
          end
        end
        FeHalted: state_q <= FeHalted;
        default: state_q <= FeIdle;
      endcase
    end
  end

  // Instruction buffer: the high beat completes the entry {high, low}.
  always_ff @(posedge clk_i) begin
    if (insn_in) buf_q[wptr_q] <= {rsp_data_i, low_q};
  end

  always_comb begin
    unique case (state_q)
      FeRun:   state_o = (can_go && !q_ready_i[target]) ? 2'(STATE_BLOCKED) : 2'(STATE_BUSY);
      default: state_o = 2'(STATE_IDLE);
    endcase
  end
  assign index_o    = index_q;
  assign dispatch_o = dispatching;

  // Checks: same-cycle implications over the values before the clock edge (what a concurrent
  // assertion samples), as immediate assertions on the clock edge that run only in an edge where
  // one of the checks fails (a simulator evaluates the checks once, together, and copies no
  // sampled values; see vta_insn_seq).
  logic beat_ok, buffer_ok, aligned_ok;
  assign beat_ok    = !(rsp_valid_i && state_q == FeRun) || fly_q != '0;
  assign buffer_ok  = 32'(cnt_q) + 32'(fly_q) <= 32'(BufInsns);
  assign aligned_ok = !(launch_i && state_q == FeIdle) || insn_addr_i[3:0] == 4'd0;
  always_ff @(posedge clk_i) begin
    if (rst_ni && !(beat_ok && buffer_ok && aligned_ok)) begin
      NoStrayBeat: assert (beat_ok)
        else $error("vta_fetch: instruction beat outside a burst");
      BufferBound: assert (buffer_ok)
        else $error("vta_fetch: instruction buffer overrun");
      AlignedStart: assert (aligned_ok)
        else $error("vta_fetch: instruction address not 16-byte aligned");
    end
  end
endmodule : vta_fetch
