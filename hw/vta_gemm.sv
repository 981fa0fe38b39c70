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
  // Products need INP_WIDTH + WGT_WIDTH bits; the sum of BLOCK_IN of them LOG_BLOCK_IN more.
  localparam int unsigned SumW = INP_WIDTH + WGT_WIDTH + LOG_BLOCK_IN + 1;
  localparam int unsigned CalcW = (SumW > ACC_WIDTH) ? SumW : ACC_WIDTH;

  // Sign extension written as (x ^ sign) - sign on the zero-extended field, in unsigned CalcW-bit
  // arithmetic: the same bits as $signed() (products and sums wrap modulo 2^CalcW, and only the
  // low ACC_WIDTH <= CalcW bits are kept), but a form a C++ compiler turns into one
  // sign-extending load, where Verilator's $signed() extension costs five instructions per
  // operand (the GEMM's 2 x BATCH x BLOCK_IN x BLOCK_OUT operands were a quarter of tsim's time).
  localparam logic [CalcW-1:0] InpSign = CalcW'(1) << (INP_WIDTH - 1);
  localparam logic [CalcW-1:0] WgtSign = CalcW'(1) << (WGT_WIDTH - 1);

  for (genvar b = 0; b < BATCH; b++) begin : g_row
    for (genvar j = 0; j < BLOCK_OUT; j++) begin : g_col
      logic [CalcW-1:0] dot;
      logic [CalcW-1:0] total;
      always_comb begin
        dot   = '0;
        total = '0;
        if (en_i && !reset_i) begin
          for (int unsigned k = 0; k < BLOCK_IN; k++) begin
            dot = dot + ((CalcW'(inp_i[(b*BLOCK_IN+k)*INP_WIDTH +: INP_WIDTH]) ^ InpSign) - InpSign)
                      * ((CalcW'(wgt_i[(j*BLOCK_IN+k)*WGT_WIDTH +: WGT_WIDTH]) ^ WgtSign) - WgtSign);
          end
          total = CalcW'(acc_i[(b*BLOCK_OUT+j)*ACC_WIDTH +: ACC_WIDTH]) + dot;
        end
      end
      assign acc_o[(b*BLOCK_OUT+j)*ACC_WIDTH +: ACC_WIDTH] = total[ACC_WIDTH-1:0];
    end
  end
endmodule : vta_gemm
