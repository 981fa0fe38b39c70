// GEMM core (combinational): for every batch row b and output channel j,
//   acc_o[b][j] = reset_i ? 0 : acc_i[b][j] + sum_k inp_i[b][k] * wgt_i[j][k]
// with signed INP_WIDTH x WGT_WIDTH products and ACC_WIDTH-bit wrapping accumulation
// (ISA reference 4.4). Element layouts are row-major, lane 0 in the low bits.
// With en_i low the output is zero and nothing is computed (a simulator skips the products in
// the cycles the core does no GEMM uop).
module vta_gemm import vta_pkg::*; (
  input  logic                     en_i,
  input  logic                     reset_i,
  input  logic [INP_ELEM_BITS-1:0] inp_i,
  input  logic [WGT_ELEM_BITS-1:0] wgt_i,
  input  logic [ACC_ELEM_BITS-1:0] acc_i,
  output logic [ACC_ELEM_BITS-1:0] acc_o
);
  // Products need ProdW = INP_WIDTH + WGT_WIDTH bits (the product of two signed values of I and
  // W bits is at most 2^(I+W-2) in magnitude); the sum of BLOCK_IN of them LOG_BLOCK_IN more.
  localparam int unsigned ProdW = INP_WIDTH + WGT_WIDTH;
  localparam int unsigned SumW = ProdW + LOG_BLOCK_IN + 1;
  localparam int unsigned CalcW = (SumW > ACC_WIDTH) ? SumW : ACC_WIDTH;

  // Sign extension written as (x ^ sign) - sign on the zero-extended field: the same bits as
  // $signed(), in a form a C++ compiler turns into a sign-extending load or vector widening
  // (Verilator's $signed() extension costs several instructions per operand).
  localparam logic [ProdW-1:0] InpSign  = ProdW'(1) << (INP_WIDTH - 1);
  localparam logic [ProdW-1:0] WgtSign  = ProdW'(1) << (WGT_WIDTH - 1);
  localparam logic [CalcW-1:0] ProdSign = CalcW'(1) << (ProdW - 1);

  // The operands as arrays of elements. For a simulator this is the form that compiles to
  // vector code: the element copies out of the packed rows are byte moves a C++ compiler merges
  // into word copies, and each dot product below is a loop over consecutive elements, which it
  // vectorises (the same products written over the packed rows cost about three instructions
  // per multiply-add: a shift, a mask and a sign extension per operand).
  logic [INP_WIDTH-1:0] inp_e [BATCH*BLOCK_IN];
  logic [WGT_WIDTH-1:0] wgt_e [BLOCK_OUT*BLOCK_IN];

  always_comb begin
    for (int unsigned b = 0; b < BATCH; b++) begin
      for (int unsigned k = 0; k < BLOCK_IN; k++) begin
        inp_e[b*BLOCK_IN+k] = inp_i[(b*BLOCK_IN+k)*INP_WIDTH +: INP_WIDTH];
      end
    end
    for (int unsigned j = 0; j < BLOCK_OUT; j++) begin
      for (int unsigned k = 0; k < BLOCK_IN; k++) begin
        wgt_e[j*BLOCK_IN+k] = wgt_i[(j*BLOCK_IN+k)*WGT_WIDTH +: WGT_WIDTH];
      end
    end
  end

  logic [CalcW-1:0] dot;
  logic [ProdW-1:0] prod;

  always_comb begin
    acc_o = '0;
    dot   = '0;
    prod  = '0;
    if (en_i && !reset_i) begin
      for (int unsigned b = 0; b < BATCH; b++) begin
        for (int unsigned j = 0; j < BLOCK_OUT; j++) begin
          dot = CalcW'(acc_i[(b*BLOCK_OUT+j)*ACC_WIDTH +: ACC_WIDTH]);
          // Kept a loop in the generated C++, which the compiler then vectorises (an unrolled
          // loop becomes a chain of scalar expressions, which it does not).
          /* verilator unroll_disable */
          for (int unsigned k = 0; k < BLOCK_IN; k++) begin
            prod = ((ProdW'(inp_e[b*BLOCK_IN+k]) ^ InpSign) - InpSign)
                 * ((ProdW'(wgt_e[j*BLOCK_IN+k]) ^ WgtSign) - WgtSign);
            dot  = dot + ((CalcW'(prod) ^ ProdSign) - ProdSign);
          end
          acc_o[(b*BLOCK_OUT+j)*ACC_WIDTH +: ACC_WIDTH] = dot[ACC_WIDTH-1:0];
        end
      end
    end
  end
endmodule : vta_gemm
