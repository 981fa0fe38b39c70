// Tensor ALU (combinational), one ACC element (BATCH x BLOCK_OUT lanes) at a time
// (ISA reference 4.5 and DESIGN.md's semantics table): lane e of the result is op(a[e], b),
// where b is the sign-extended immediate when use_imm_i is set, else b_i[e].
//   MIN / MAX  signed;  ADD, MUL  wrapping to ACC_WIDTH bits;
//   SHR        b >= 0: arithmetic right shift by b & 31; b < 0: left shift by (-b) & 31.
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

  logic signed [ACC_WIDTH-1:0] a, b, y;
  logic        [4:0]           amount;

  always_comb begin
    y_o    = '0;
    a      = '0;
    b      = '0;
    y      = '0;
    amount = '0;
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
          default: y = a;
        endcase
        y_o[e*ACC_WIDTH +: ACC_WIDTH] = y;
      end
    end
  end
endmodule : vta_alu
