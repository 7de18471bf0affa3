// RGMII <-> GMII for 1 Gbit/s on Kintex-7 (IDELAYE2, IDDR, ODDR).
// Receive: the PHY's clock (rgmii_rxc) is buffered (BUFG) and clocks the IDDRs; data and control pass
// an IDELAYE2 with RX_IDELAY_TAPS taps (0 when the PHY adds the 2 ns clock delay itself). Rising edge:
// data bits 3:0 and RX_DV; falling edge: bits 7:4 and RX_DV xor RX_ER (RGMII v2.0).
// Transmit: ODDRs clocked by clk_tx send bits 3:0 / TX_EN on the rising edge and 7:4 / TX_EN xor TX_ER
// on the falling edge; the clock itself comes from an ODDR clocked by clk_tx90 (90 degrees = 2 ns
// later), so the PHY sees data centred on its clock without its own TX delay.
module nanobpf_rgmii_phy #(
    parameter int RX_IDELAY_TAPS = 0
) (
    input  logic       clk_ref,      // 200 MHz IDELAYCTRL reference
    input  logic       rst_ref,
    input  logic       clk_tx,       // 125 MHz
    input  logic       clk_tx90,     // 125 MHz, 90 degrees later
    input  logic       rgmii_rxc,
    input  logic       rgmii_rx_ctl,
    input  logic [3:0] rgmii_rxd,
    output logic       rgmii_txc,
    output logic       rgmii_tx_ctl,
    output logic [3:0] rgmii_txd,
    output logic       rx_clk,       // GMII receive clock (the PHY's), for the MAC's receive side
    output logic [7:0] gmii_rxd,
    output logic       gmii_rx_dv,
    output logic       gmii_rx_er,
    input  logic [7:0] gmii_txd,     // in clk_tx
    input  logic       gmii_tx_en,
    input  logic       gmii_tx_er
);
  // ---- receive
  BUFG rxc_bufg (.I(rgmii_rxc), .O(rx_clk));
  (* IODELAY_GROUP = "rgmii" *) IDELAYCTRL idelayctrl (.REFCLK(clk_ref), .RST(rst_ref), .RDY());

  logic [4:0] rx_in, rx_dly;
  logic [4:0] rx_rise, rx_fall;
  assign rx_in = {rgmii_rx_ctl, rgmii_rxd};
  for (genvar i = 0; i < 5; i++) begin : g_rx
    (* IODELAY_GROUP = "rgmii" *) IDELAYE2 #(
        .IDELAY_TYPE("FIXED"), .IDELAY_VALUE(RX_IDELAY_TAPS), .DELAY_SRC("IDATAIN"),
        .REFCLK_FREQUENCY(200.0), .HIGH_PERFORMANCE_MODE("TRUE"), .SIGNAL_PATTERN("DATA")
    ) dly (
        .IDATAIN(rx_in[i]), .DATAOUT(rx_dly[i]), .C(1'b0), .CE(1'b0), .INC(1'b0), .LD(1'b0),
        .LDPIPEEN(1'b0), .REGRST(1'b0), .CINVCTRL(1'b0), .CNTVALUEIN(5'd0), .CNTVALUEOUT(), .DATAIN(1'b0)
    );
    IDDR #(.DDR_CLK_EDGE("SAME_EDGE_PIPELINED")) iddr (
        .C(rx_clk), .CE(1'b1), .D(rx_dly[i]), .R(1'b0), .S(1'b0), .Q1(rx_rise[i]), .Q2(rx_fall[i])
    );
  end
  always_ff @(posedge rx_clk) begin
    gmii_rxd   <= {rx_fall[3:0], rx_rise[3:0]};
    gmii_rx_dv <= rx_rise[4];
    gmii_rx_er <= rx_rise[4] ^ rx_fall[4];
  end

  // ---- transmit
  logic [4:0] tx_rise, tx_fall, tx_out;
  assign tx_rise = {gmii_tx_en, gmii_txd[3:0]};
  assign tx_fall = {gmii_tx_en ^ gmii_tx_er, gmii_txd[7:4]};
  for (genvar i = 0; i < 5; i++) begin : g_tx
    ODDR #(.DDR_CLK_EDGE("SAME_EDGE"), .SRTYPE("SYNC")) oddr (
        .C(clk_tx), .CE(1'b1), .D1(tx_rise[i]), .D2(tx_fall[i]), .R(1'b0), .S(1'b0), .Q(tx_out[i])
    );
  end
  assign {rgmii_tx_ctl, rgmii_txd} = tx_out;
  ODDR #(.DDR_CLK_EDGE("SAME_EDGE"), .SRTYPE("SYNC")) txck_oddr (
      .C(clk_tx90), .CE(1'b1), .D1(1'b1), .D2(1'b0), .R(1'b0), .S(1'b0), .Q(rgmii_txc)
  );
endmodule
