// Reset synchroniser: asserted asynchronously, released on the third clock edge after `arst` falls.
module nanobpf_reset_sync (
    input  logic clk,
    input  logic arst,  // asynchronous, active high
    output logic rst    // synchronous release, active high
);
  // asynchronous assertion is the point; downstream logic uses the output as a synchronous reset
  /* verilator lint_off SYNCASYNCNET */
  (* ASYNC_REG = "TRUE" *) logic [2:0] stages;
  /* verilator lint_on SYNCASYNCNET */
  always_ff @(posedge clk or posedge arst)
    if (arst) stages <= '1;
    else stages <= {stages[1:0], 1'b0};
  assign rst = stages[2];
endmodule
