// Instruction sequencer of the load, compute and store units (ISA reference 5.1): runs the
// unit's queue one instruction at a time, while the unit itself only checks and executes the
// instruction it is given:
//   SeqIdle    the queue head waits for its pop tokens. Once they are there (and no halt) it is
//              taken: its tokens are popped and decode_o asks the unit to check it, in the same
//              cycle (the unit decodes the queue head combinationally). done_i: nothing to
//              execute, it retires in this cycle; err_i: it fails; neither: start_o, the unit
//              starts executing it and the sequencer keeps a copy of it.
//   SeqExec    exec_o: the unit executes it; in the cycle of done_i it retires (or err_i).
//   SeqHalted  after err_i, until rst_ni.
// Retiring pushes the instruction's tokens (counted at the next edge, like every push) and
// pops the queue; the next instruction is taken the cycle after. A no-op therefore takes one
// cycle, an executed instruction one cycle plus its execution (the cycles up to and including
// the one with done_i). The instruction stays at the queue head until it retires. Token
// channel 0 is the unit's "prev" dependency (pop_prev_dep, push_prev_dep), channel 1 its "next"
// one; a unit without a neighbour on one side clears UsePrevDep or UseNextDep, and the flags of
// that side are ignored.
module vta_insn_seq import vta_pkg::*; #(
  parameter bit UsePrevDep = 1'b1,
  parameter bit UseNextDep = 1'b1
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  halt_i,        // take no new instruction
  // instruction queue head: {stream index, instruction}
  input  logic                  q_valid_i,
  output logic                  q_ready_o,
  input  logic [INSN_BITS+31:0] q_data_i,
  // tokens: [0] prev, [1] next
  input  logic [1:0]            tok_avail_i,
  output logic [1:0]            tok_pop_o,
  output logic [1:0]            tok_push_o,
  // the instruction in the unit, from decode to retire
  output logic [INSN_BITS-1:0]  insn_o,
  output logic [31:0]           insn_index_o,
  output logic                  decode_o,
  output logic                  start_o,
  output logic                  exec_o,
  input  logic                  done_i,        // with decode_o or exec_o
  input  logic                  err_i,         // with decode_o or exec_o; never with done_i
  output logic                  err_o,         // err_i taken: the unit halts
  // status
  output logic [1:0]            state_o,       // vta_pkg STATE_*
  output logic [31:0]           index_o,       // the current (or waiting) instruction's index
  output logic                  retire_o
);
  localparam logic [1:0] DepMask = {UseNextDep, UsePrevDep};

  typedef enum logic [1:0] {SeqIdle, SeqExec, SeqHalted} seq_state_e;
  seq_state_e           state_q, state_d;
  logic [INSN_BITS-1:0] insn_q, insn;
  logic [31:0]          index_q;

  logic [INSN_BITS-1:0] head;
  logic [31:0]          head_index;
  logic [1:0]           head_pops, insn_pushes;
  logic                 pop_ok, take;
  assign head        = q_data_i[INSN_BITS-1:0];
  assign head_index  = q_data_i[INSN_BITS +: 32];
  assign head_pops   = DepMask & {head[INSN_POP_NEXT_DEP_LO], head[INSN_POP_PREV_DEP_LO]};
  assign pop_ok      = (head_pops & ~tok_avail_i) == '0;
  assign take        = (state_q == SeqIdle) && q_valid_i && !halt_i && pop_ok;
  // The instruction in the unit: the queue head, which stays in place until the instruction
  // retires (HeadHeld checks it against the kept copy insn_q), so the unit reads the head in
  // every state and no 128-bit mux between the head and the copy is evaluated every cycle.
  assign insn        = head;
  assign insn_pushes = DepMask & {insn[INSN_PUSH_NEXT_DEP_LO], insn[INSN_PUSH_PREV_DEP_LO]};

  always_comb begin
    state_d    = state_q;
    tok_pop_o  = '0;
    tok_push_o = '0;
    q_ready_o  = 1'b0;
    retire_o   = 1'b0;
    start_o    = 1'b0;
    err_o      = 1'b0;
    // A plain case: its items are distinct constants and it has a default, so the checks of a
    // unique case (no item or several items matching) could never fail, and a simulator would
    // still evaluate them every cycle.
    case (state_q)
      SeqIdle, SeqExec: begin
        if (take) tok_pop_o = head_pops;
        if (take || state_q == SeqExec) begin
          if (err_i) begin
            err_o   = 1'b1;
            state_d = SeqHalted;
          end else if (done_i) begin
            tok_push_o = insn_pushes;
            q_ready_o  = 1'b1;
            retire_o   = 1'b1;
            state_d    = SeqIdle;
          end else if (take) begin
            start_o = 1'b1;
            state_d = SeqExec;
          end
        end
      end
      SeqHalted: state_d = SeqHalted;
      default:   state_d = SeqIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= SeqIdle;
    end else begin
      state_q <= state_d;
    end
  end

  // The kept copy of the instruction and its index: loaded only when an instruction is taken
  // (an enabled register, so a simulator copies the 160 bits once per instruction, not every
  // cycle).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      insn_q  <= '0;
      index_q <= '0;
    end else if (take) begin
      insn_q  <= head;
      index_q <= head_index;
    end
  end

  assign insn_o       = insn;
  assign insn_index_o = (state_q == SeqIdle) ? head_index : index_q;
  assign decode_o     = take;
  assign exec_o       = (state_q == SeqExec);

  always_comb begin
    case (state_q)  // distinct constant items and a default (see above)
      SeqIdle:   state_o = !q_valid_i ? 2'(STATE_IDLE)
                         : (!pop_ok ? 2'(STATE_WAIT_TOKEN) : 2'(STATE_BUSY));
      SeqHalted: state_o = 2'(STATE_IDLE);
      default:   state_o = 2'(STATE_BUSY);
    endcase
  end
  assign index_o = insn_index_o;

  // Checks. Each is a same-cycle implication over the values before the clock edge (what a
  // concurrent assertion samples), written as an immediate assertion on the clock edge; the
  // labelled assertions run only in an edge where one of the checks fails, so a simulator
  // evaluates the checks once, together, and copies no sampled values. A concurrent assertion on
  // the queue head would make Verilator keep a sampled copy of the whole queue storage.
  //   HeadHeld: the instruction is popped from its queue only when it retires, so the head stays
  //             in place while it executes.
  // HeadHeld compares the 160-bit queue head only in the cycles of an executing instruction
  always_ff @(posedge clk_i) begin
    if (rst_ni && state_q == SeqExec) begin
      if (!(q_valid_i && q_data_i == {index_q, insn_q})) begin
        HeadHeld: assert (q_valid_i && q_data_i == {index_q, insn_q})
          else $error("vta_insn_seq: the queue head changed under the running instruction");
      end
    end
  end
  // PopWithToken and DoneOrErr are about a taken or executing instruction (tokens are popped
  // only when one is taken), so they are computed only in those edges, inside the clocked process
  always_ff @(posedge clk_i) begin
    if (rst_ni && (take || state_q == SeqExec)) begin
      automatic logic pop_with_token_ok, done_or_err_ok;
      pop_with_token_ok = (tok_pop_o & ~tok_avail_i) == '0;
      done_or_err_ok    = !(done_i && err_i);
      if (!(pop_with_token_ok && done_or_err_ok)) begin
        PopWithToken: assert (pop_with_token_ok)
          else $error("vta_insn_seq: token popped from an empty channel");
        DoneOrErr: assert (done_or_err_ok)
          else $error("vta_insn_seq: the unit reports both done and error");
      end
    end
  end
endmodule : vta_insn_seq
