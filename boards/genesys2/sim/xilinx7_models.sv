// Behavioural stand-ins for the Xilinx 7-series primitives the Genesys2 top uses, written here for the
// checks run in Verilator (lint of the board top, the RGMII block test). Never given to Vivado, which has the real
// ones. Port lists follow Xilinx UG953; timing is not modelled: IDELAYE2 has no delay and the MMCM
// passes its input clock to every output (enough to elaborate and lint, not to simulate frequencies).
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off UNUSEDSIGNAL */
module IBUFDS #(parameter DIFF_TERM = "FALSE", parameter IOSTANDARD = "DEFAULT") (input I, input IB, output O);
  assign O = I;
endmodule

module BUFG (input I, output O);
  assign O = I;
endmodule

module MMCME2_BASE #(
    parameter real CLKIN1_PERIOD = 0.0, parameter int DIVCLK_DIVIDE = 1, parameter real CLKFBOUT_MULT_F = 5.0,
    parameter real CLKOUT0_DIVIDE_F = 1.0, parameter int CLKOUT1_DIVIDE = 1, parameter real CLKOUT1_PHASE = 0.0,
    parameter int CLKOUT2_DIVIDE = 1, parameter int CLKOUT3_DIVIDE = 1
) (
    input CLKIN1, input RST, input PWRDWN, input CLKFBIN, output CLKFBOUT, output CLKFBOUTB,
    output CLKOUT0, output CLKOUT0B, output CLKOUT1, output CLKOUT1B, output CLKOUT2, output CLKOUT2B,
    output CLKOUT3, output CLKOUT3B, output CLKOUT4, output CLKOUT5, output CLKOUT6, output LOCKED
);
  assign {CLKFBOUT, CLKOUT0, CLKOUT1, CLKOUT2, CLKOUT3, CLKOUT4, CLKOUT5, CLKOUT6} = {8{CLKIN1}};
  assign {CLKFBOUTB, CLKOUT0B, CLKOUT1B, CLKOUT2B, CLKOUT3B} = {5{~CLKIN1}};
  assign LOCKED = ~RST;
endmodule

module IDELAYCTRL (input REFCLK, input RST, output RDY);
  assign RDY = ~RST;
endmodule

module IDELAYE2 #(
    parameter IDELAY_TYPE = "FIXED", parameter int IDELAY_VALUE = 0, parameter DELAY_SRC = "IDATAIN",
    parameter real REFCLK_FREQUENCY = 200.0, parameter HIGH_PERFORMANCE_MODE = "TRUE",
    parameter SIGNAL_PATTERN = "DATA"
) (
    input IDATAIN, output DATAOUT, input C, input CE, input INC, input LD, input LDPIPEEN, input REGRST,
    input CINVCTRL, input [4:0] CNTVALUEIN, output [4:0] CNTVALUEOUT, input DATAIN
);
  assign DATAOUT = IDATAIN;
  assign CNTVALUEOUT = 5'(IDELAY_VALUE);
endmodule

// DDR input, SAME_EDGE_PIPELINED: the rising-edge sample and the falling-edge sample after it leave
// together on the next rising edge.
module IDDR #(parameter DDR_CLK_EDGE = "SAME_EDGE_PIPELINED") (
    input C, input CE, input D, input R, input S, output reg Q1, output reg Q2
);
  reg rise, fall;
  always @(posedge C) rise <= D;
  always @(negedge C) fall <= D;
  always @(posedge C) begin
    Q1 <= rise;
    Q2 <= fall;
  end
endmodule

// DDR output, SAME_EDGE: D1 and D2 taken on the rising edge; D1 out while C is high, D2 while low.
module ODDR #(parameter DDR_CLK_EDGE = "SAME_EDGE", parameter SRTYPE = "SYNC") (
    input C, input CE, input D1, input D2, input R, input S, output Q
);
  reg q1, q2, q2_next;
  always @(posedge C) begin
    q1 <= D1;
    q2_next <= D2;
  end
  always @(negedge C) q2 <= q2_next;
  assign Q = C ? q1 : q2;
endmodule
