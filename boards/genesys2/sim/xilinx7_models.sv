// Behavioural stand-ins for the Xilinx 7-series primitives the Genesys2 top (and the LiteDRAM K7 core it
// instantiates) uses, written here for the
// checks run in Verilator (lint of the board top, the RGMII block test). Never given to Vivado, which has the real
// ones. Port lists follow Xilinx UG953; timing is not modelled: IDELAYE2 has no delay and the MMCM
// passes its input clock to every output (enough to elaborate and lint, not to simulate frequencies),
// except in the board's simulation (NANOBPF_BOARD_SIM), where the harness makes its output clocks.
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
`ifdef NANOBPF_BOARD_SIM
  // The board simulated from its pins (boards/genesys2/sim/boardsim, make board-sim): without a timing
  // model the harness makes the outputs at the frequencies the board's facts give (board.toml [clocks],
  // the same as these parameters) and hands them in through the simulation top's ports.
  assign {CLKOUT3, CLKOUT2, CLKOUT1, CLKOUT0} = nanobpf_board_sim.mmcm_clk;
  assign {CLKFBOUT, CLKOUT4, CLKOUT5, CLKOUT6} = {4{CLKIN1}};
  assign {CLKFBOUTB, CLKOUT0B, CLKOUT1B, CLKOUT2B, CLKOUT3B} = ~{CLKIN1, CLKOUT0, CLKOUT1, CLKOUT2, CLKOUT3};
  assign LOCKED = nanobpf_board_sim.mmcm_locked && !RST;
`else
  assign {CLKFBOUT, CLKOUT0, CLKOUT1, CLKOUT2, CLKOUT3, CLKOUT4, CLKOUT5, CLKOUT6} = {8{CLKIN1}};
  assign {CLKFBOUTB, CLKOUT0B, CLKOUT1B, CLKOUT2B, CLKOUT3B} = {5{~CLKIN1}};
  assign LOCKED = ~RST;
`endif
endmodule

module IDELAYCTRL (input REFCLK, input RST, output RDY);
  assign RDY = ~RST;
endmodule

module IDELAYE2 #(
    parameter IDELAY_TYPE = "FIXED", parameter int IDELAY_VALUE = 0, parameter DELAY_SRC = "IDATAIN",
    parameter real REFCLK_FREQUENCY = 200.0, parameter HIGH_PERFORMANCE_MODE = "TRUE",
    parameter SIGNAL_PATTERN = "DATA", parameter CINVCTRL_SEL = "FALSE", parameter PIPE_SEL = "FALSE"
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

// ---- the primitives of LiteDRAM's K7 DDR3 core (build/litedram/genesys2/board): port and parameter lists
// as the generated core uses them (UG953); stand-ins enough for lint, not a DDR3 PHY model.
module PLLE2_ADV #(
    parameter real CLKIN1_PERIOD = 0.0, parameter int DIVCLK_DIVIDE = 1, parameter int CLKFBOUT_MULT = 5,
    parameter real REF_JITTER1 = 0.01, parameter STARTUP_WAIT = "FALSE",
    parameter int CLKOUT0_DIVIDE = 1, parameter real CLKOUT0_PHASE = 0.0,
    parameter int CLKOUT1_DIVIDE = 1, parameter real CLKOUT1_PHASE = 0.0,
    parameter int CLKOUT2_DIVIDE = 1, parameter real CLKOUT2_PHASE = 0.0,
    parameter int CLKOUT3_DIVIDE = 1, parameter real CLKOUT3_PHASE = 0.0,
    parameter int CLKOUT4_DIVIDE = 1, parameter real CLKOUT4_PHASE = 0.0,
    parameter int CLKOUT5_DIVIDE = 1, parameter real CLKOUT5_PHASE = 0.0
) (
    input CLKIN1, input RST, input PWRDWN, input CLKFBIN, output CLKFBOUT,
    output CLKOUT0, output CLKOUT1, output CLKOUT2, output CLKOUT3, output CLKOUT4, output CLKOUT5, output LOCKED
);
  assign {CLKFBOUT, CLKOUT0, CLKOUT1, CLKOUT2, CLKOUT3, CLKOUT4, CLKOUT5} = {7{CLKIN1}};
  assign LOCKED = ~RST;
endmodule

module OSERDESE2 #(
    parameter DATA_RATE_OQ = "DDR", parameter DATA_RATE_TQ = "DDR", parameter int DATA_WIDTH = 4,
    parameter int TRISTATE_WIDTH = 4, parameter SERDES_MODE = "MASTER"
) (
    input CLK, input CLKDIV, input D1, input D2, input D3, input D4, input D5, input D6, input D7, input D8,
    input OCE, input RST, input T1, input T2, input T3, input T4, input TCE, output OQ, output OFB, output TQ
);
  reg oq;
  always @(posedge CLK) oq <= D1;
  assign OQ = oq;
  assign OFB = oq;
  assign TQ = T1;
endmodule

module ODELAYE2 #(
    parameter ODELAY_TYPE = "FIXED", parameter int ODELAY_VALUE = 0, parameter DELAY_SRC = "ODATAIN",
    parameter real REFCLK_FREQUENCY = 200.0, parameter HIGH_PERFORMANCE_MODE = "TRUE",
    parameter SIGNAL_PATTERN = "DATA", parameter CINVCTRL_SEL = "FALSE", parameter PIPE_SEL = "FALSE"
) (
    input ODATAIN, output DATAOUT, input C, input CE, input INC, input LD, input LDPIPEEN, input REGRST,
    input CINVCTRL, input [4:0] CNTVALUEIN, output [4:0] CNTVALUEOUT, input CLKIN
);
  assign DATAOUT = ODATAIN;
  assign CNTVALUEOUT = 5'(ODELAY_VALUE);
endmodule

module ISERDESE2 #(
    parameter DATA_RATE = "DDR", parameter int DATA_WIDTH = 4, parameter INTERFACE_TYPE = "NETWORKING",
    parameter IOBDELAY = "NONE", parameter int NUM_CE = 2, parameter SERDES_MODE = "MASTER"
) (
    input BITSLIP, input CE1, input CE2, input CLK, input CLKB, input CLKDIV, input D, input DDLY, input RST,
    output Q1, output Q2, output Q3, output Q4, output Q5, output Q6, output Q7, output Q8
);
  reg q;
  always @(posedge CLK) q <= DDLY;
  assign {Q1, Q2, Q3, Q4, Q5, Q6, Q7, Q8} = {8{q}};
endmodule

module IOBUF (input I, input T, output O, inout IO);
  assign IO = T ? 1'bz : I;
  assign O = IO;
endmodule

module IOBUFDS (input I, input T, output O, inout IO, inout IOB);
  assign IO = T ? 1'bz : I;
  assign IOB = T ? 1'bz : ~I;
  assign O = IO;
endmodule

module OBUFDS (input I, output O, output OB);
  assign O = I;
  assign OB = ~I;
endmodule

module FDCE #(parameter bit INIT = 1'b0) (input C, input CE, input CLR, input D, output reg Q);
  initial Q = INIT;
  always @(posedge C or posedge CLR) if (CLR) Q <= 1'b0; else if (CE) Q <= D;
endmodule

module FDPE #(parameter bit INIT = 1'b1) (input C, input CE, input PRE, input D, output reg Q);
  initial Q = INIT;
  always @(posedge C or posedge PRE) if (PRE) Q <= 1'b1; else if (CE) Q <= D;
endmodule
