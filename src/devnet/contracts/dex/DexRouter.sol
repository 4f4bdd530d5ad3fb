// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DexFactory} from "./DexFactory.sol";
import {DexPair} from "./DexPair.sol";
import {SafeTransfer} from "../common/SafeTransfer.sol";

/// @title DexRouter
/// @notice Convenience for devnet scripts: one call to add liquidity or to swap, with the caller's tokens
///         pulled by transferFrom (approve the router first).
/// @dev Not a production router: addLiquidity deposits the amounts as given (no ratio matching; an off-ratio
///      deposit donates the surplus to existing LPs) and there are no deadlines or multi-hop paths.
contract DexRouter {
    using SafeTransfer for address;

    DexFactory public immutable factory;

    error PairNotFound(address tokenA, address tokenB);
    error InsufficientOutputAmount(uint256 amountOut, uint256 amountOutMin);
    error InsufficientInputAmount();
    error InsufficientLiquidity();

    constructor(address _factory) {
        factory = DexFactory(_factory);
    }

    /// @notice Transfers `amountA` of `tokenA` and `amountB` of `tokenB` from the caller into their pair
    ///         (created when missing) and mints the LP shares to `to`.
    function addLiquidity(address tokenA, address tokenB, uint256 amountA, uint256 amountB, address to)
        external
        returns (uint256 liquidity)
    {
        address pair = factory.getPair(tokenA, tokenB);
        if (pair == address(0)) pair = factory.createPair(tokenA, tokenB);
        tokenA.safeTransferFrom(msg.sender, pair, amountA);
        tokenB.safeTransferFrom(msg.sender, pair, amountB);
        liquidity = DexPair(pair).mint(to);
    }

    /// @notice Swaps exactly `amountIn` of `tokenIn` for `tokenOut` through their pair, sending the output to
    ///         `to`; reverts when the output would be below `amountOutMin`.
    function swapExactTokensForTokens(
        uint256 amountIn,
        uint256 amountOutMin,
        address tokenIn,
        address tokenOut,
        address to
    ) external returns (uint256 amountOut) {
        address pair = factory.getPair(tokenIn, tokenOut);
        if (pair == address(0)) revert PairNotFound(tokenIn, tokenOut);

        (uint112 reserve0, uint112 reserve1,) = DexPair(pair).getReserves();
        bool inIsToken0 = tokenIn == DexPair(pair).token0();
        (uint256 reserveIn, uint256 reserveOut) = inIsToken0 ? (reserve0, reserve1) : (reserve1, reserve0);
        amountOut = getAmountOut(amountIn, reserveIn, reserveOut);
        if (amountOut < amountOutMin) revert InsufficientOutputAmount(amountOut, amountOutMin);

        tokenIn.safeTransferFrom(msg.sender, pair, amountIn);
        (uint256 amount0Out, uint256 amount1Out) = inIsToken0 ? (uint256(0), amountOut) : (amountOut, uint256(0));
        DexPair(pair).swap(amount0Out, amount1Out, to, "");
    }

    /// @notice Output for `amountIn` against the given reserves after the 0.3% fee (same formula the pair
    ///         enforces): amountIn*997*reserveOut / (reserveIn*1000 + amountIn*997).
    function getAmountOut(uint256 amountIn, uint256 reserveIn, uint256 reserveOut)
        public
        pure
        returns (uint256 amountOut)
    {
        if (amountIn == 0) revert InsufficientInputAmount();
        if (reserveIn == 0 || reserveOut == 0) revert InsufficientLiquidity();
        uint256 amountInWithFee = amountIn * 997;
        amountOut = (amountInWithFee * reserveOut) / (reserveIn * 1000 + amountInWithFee);
    }
}
