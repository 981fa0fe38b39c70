// Tensor ALU (combinational), one ACC element (BATCH x BLOCK_OUT lanes) at a time
// (ISA reference 4.5 and DESIGN.md's semantics table): lane e of the result is op(a[e], b),
// where b is the sign-extended immediate when use_imm_i is set, else b_i[e].
//   MIN / MAX  signed;  ADD, MUL  wrapping to ACC_WIDTH bits;
//   SHR        b >= 0: arithmetic right shift by b & 31; b < 0: left shift by (-b) & 31.
//   REQ        (hardware option ALU_REQUANT) with b taken as 32 bits (the immediate or the lane,
//              sign-extended): m = b[15:0] unsigned, s = b[21:16];
//              clip((a * m + 2^(s-1)) >>> s) to the signed OUT_WIDTH range, the product exact
//              (no rounding term for s = 0). Without the option its datapath is not built.
//   MOV        (hardware option ALU_MOV; opcode ALU_OPCODE_MOV, as the option's key is ALU_MOV)
//              y = b: a copy of the source lane, or the immediate sign-extended (a constant
//              fill). Without the option it is not built (the opcode leaves a unchanged).
// With en_i low the output is zero and nothing is computed: every lane, its operand selection
// included, is inside the one enable test, so a simulator evaluates no lane in the cycles the
// core does no ALU uop (per-lane continuous assignments would be evaluated every cycle).
module vta_alu import vta_pkg::*; (
  input  logic                     en_i,
  input  logic [2:0]               op_i,
  input  logic                     use_imm_i,
  input  logic [15:0]              imm_i,
  input  logic [ACC_ELEM_BITS-1:0] a_i,
  input  logic [ACC_ELEM_BITS-1:0] b_i,
  output logic [ACC_ELEM_BITS-1:0] y_o
);
  localparam int unsigned Lanes = BATCH * BLOCK_OUT;

  localparam logic signed [63:0] OutMax = 64'((64'sd1 <<< (OUT_WIDTH - 1)) - 64'sd1);
  localparam logic signed [63:0] OutMin = -OutMax - 64'sd1;

  logic signed [ACC_WIDTH-1:0] a, b, y;
  logic        [4:0]           amount;
  logic signed [31:0]          b32;   // REQ: the operand as 32 bits
  logic        [5:0]           rq_s;
  logic signed [63:0]          rq_p;

  always_comb begin
    y_o    = '0;
    a      = '0;
    b      = '0;
    y      = '0;
    amount = '0;
    b32    = '0;
    rq_s   = '0;
    rq_p   = '0;
    if (en_i) begin
      for (int unsigned e = 0; e < Lanes; e++) begin
        a = $signed(a_i[e*ACC_WIDTH +: ACC_WIDTH]);
        b = use_imm_i ? ACC_WIDTH'($signed(imm_i)) : $signed(b_i[e*ACC_WIDTH +: ACC_WIDTH]);
        // (-b) & 31 == (-(b & 31)) & 31
        amount = b[ACC_WIDTH-1] ? (5'd0 - b[4:0]) : b[4:0];
        unique case (32'(op_i))
          ALU_MIN: y = (a < b) ? a : b;
          ALU_MAX: y = (a > b) ? a : b;
          ALU_ADD: y = a + b;
          ALU_SHR: y = b[ACC_WIDTH-1] ? (a << amount) : (a >>> amount);
          ALU_MUL: y = a * b;  // the low ACC_WIDTH bits of the product
          ALU_REQ: begin
            if (ALU_REQUANT != 0) begin
              b32  = use_imm_i ? 32'($signed(imm_i)) : 32'(b);
              rq_s = b32[21:16];
              rq_p = 64'(a) * $signed({48'd0, b32[15:0]});
              if (rq_s != '0) begin
                rq_p = (rq_p + (64'sd1 <<< (rq_s - 6'd1))) >>> rq_s;
              end
              y = (rq_p > OutMax) ? ACC_WIDTH'(OutMax)
                : ((rq_p < OutMin) ? ACC_WIDTH'(OutMin) : ACC_WIDTH'(rq_p));
            end else begin
              y = a;
            end
          end
          ALU_OPCODE_MOV: y = (ALU_MOV != 0) ? b : a;
          default: y = a;
        endcase
        y_o[e*ACC_WIDTH +: ACC_WIDTH] = y;
      end
    end
  end

  // REQ reads bits 21:0 of its operand; the bits above are ignored by definition.
  logic unused_b32;
  assign unused_b32 = ^b32[31:22];
endmodule : vta_alu
